"""Parsing and validating session create bodies (EP-SESS-1 … EP-SESS-3, EP-PIPE-1).

Both doors hand over the body as read (the facade: the parsed JSON; a Python caller: its dict);
this module turns it into a typed request or raises the contract's error, and is the one place
that decides which: the facade's schema check runs only after it (``sim.platform``), so both doors
refuse the same body with the same type, code, param and message. It refuses at least everything
the spec's request schema refuses.

The order is fixed, so the same body always gives the same error, and independent of the order
in which an object's keys were written: no body (422 ``validation.required``), not an object
(400 ``body.not_object``), then the seed's own 400s, which win over any 422 of the same body
(``transport.unsupported``, ``metadata.reserved_key``, GAP-ERR-5), then unknown fields (sorted),
then each field (GAP-ERR-1, GAP-SES-11). Every bound and default comes from the configuration
(``Settings``, its compiled values; the metadata's limits from ``LimitsConfig``). A whole-number
float (``600.0``) is an integer, as JSON Schema counts it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from sim import tuples
from sim.config import QUALITIES, LimitsConfig
from sim.errors import InvalidRequest, Unprocessable
from sim.metadata import check_metadata, reserved_key
from sim.settings import Settings

__all__ = [
    "AUDIO_SOURCES",
    "QUALITIES",
    "PipecatRequest",
    "SessionRequest",
    "TransportRequest",
    "parse_pipecat_request",
    "parse_session_request",
    "plain_create",
]

AUDIO_SOURCES: Final[tuple[str, ...]] = ("track", "data_stream")
RELAY_TYPES: Final[tuple[str, ...]] = ("websocket",)

_SESSION_FIELDS: Final = frozenset(
    {
        "avatar_id",
        "transport",
        "idle_timeout_seconds",
        "max_duration_seconds",
        "metadata",
        "quality",
    }
)
_PIPECAT_FIELDS: Final = frozenset(
    {"avatar_id", "idle_timeout_seconds", "max_duration_seconds", "quality", "relay_type"}
)
_LIVEKIT_FIELDS: Final = frozenset({"type", "url", "room_name", "worker_token", "audio_source"})
_LIVEKIT: Final = "livekit"
#: ``wss://`` and at least one more character on the same line (the spec's pattern).
_WSS: Final = re.compile(r"wss://.")


class TransportRequest(NamedTuple):
    type: str
    url: str
    room_name: str
    audio_source: str
    worker_token: str | None = None

    def rendered(self) -> dict[str, Any]:
        """The transport as the API returns it: ``worker_token`` is never part of it."""
        return {
            "type": self.type,
            "url": self.url,
            "room_name": self.room_name,
            "audio_source": self.audio_source,
        }


#: The keys a session's transport may show (``TransportRequest.rendered``; a pipecat session's
#: only ``type``).
TRANSPORT_KEYS: Final[tuple[str, ...]] = ("type", "url", "room_name", "audio_source")


class SessionRequest(NamedTuple):
    avatar_id: str
    transport: TransportRequest
    idle_timeout_seconds: int
    max_duration_seconds: int  # as requested; the service clamps it to the plan
    metadata: dict[str, Any]
    quality: str


class PipecatRequest(NamedTuple):
    avatar_id: str
    idle_timeout_seconds: int
    max_duration_seconds: int
    quality: str
    relay_type: str


def _unknown_fields(body: Mapping[str, Any], allowed: frozenset[str], prefix: str = "") -> None:
    if allowed.issuperset(body):  # every field known (the common case): nothing to sort
        return
    for name in sorted(body):
        if name not in allowed:
            raise Unprocessable(
                "validation.unknown_field",
                f"Unknown field `{prefix}{name}`.",
                param=f"{prefix}{name}",
            )


def _required_string(body: Mapping[str, Any], name: str, param: str) -> str:
    if name not in body:
        raise Unprocessable("validation.required", f"`{param}` is required.", param=param)
    value = body[name]
    if not isinstance(value, str):
        raise Unprocessable("validation.type", f"`{param}` must be a string.", param=param)
    if not value:
        raise Unprocessable("validation.range", f"`{param}` must not be empty.", param=param)
    return value


def _integer(body: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    if name not in body:
        return default
    value = body[name]
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 600.0 is the integer 600
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unprocessable("validation.type", f"`{name}` must be an integer.", param=name)
    if not low <= value <= high:
        raise Unprocessable(
            "validation.range", f"`{name}` must be from {low} to {high}.", param=name
        )
    return value


def _enum(
    body: Mapping[str, Any], name: str, default: str, allowed: tuple[str, ...], param: str
) -> str:
    if name not in body:
        return default
    value = body[name]
    if not isinstance(value, str):
        raise Unprocessable("validation.type", f"`{param}` must be a string.", param=param)
    if value not in allowed:
        raise Unprocessable(
            "validation.enum", f"`{param}` must be one of: {', '.join(allowed)}.", param=param
        )
    return value


def _object(body: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    if name not in body:
        return None
    value = body[name]
    if not isinstance(value, dict):
        raise Unprocessable("validation.type", f"`{name}` must be an object.", param=name)
    return value


def _transport(body: Mapping[str, Any], settings: Settings) -> TransportRequest:
    raw = _object(body, "transport")
    if raw is None:
        raise Unprocessable("validation.required", "`transport` is required.", param="transport")
    if "type" not in raw:
        raise Unprocessable(
            "validation.required", "`transport.type` is required.", param="transport.type"
        )
    if raw["type"] != _LIVEKIT:
        raise Unprocessable(
            "validation.type", "`transport.type` must be a string.", param="transport.type"
        )  # a string other than livekit was refused earlier (_seed_refusals)
    _unknown_fields(raw, _LIVEKIT_FIELDS, prefix="transport.")
    url = _required_string(raw, "url", "transport.url")
    if not _WSS.match(url):
        raise Unprocessable(
            "validation.format", "`transport.url` must be a wss:// address.", param="transport.url"
        )
    room_name = _required_string(raw, "room_name", "transport.room_name")
    worker_token: str | None = None
    if "worker_token" in raw:
        worker_token = _required_string(raw, "worker_token", "transport.worker_token")
    audio_source = _enum(
        raw, "audio_source", settings.default_audio_source, AUDIO_SOURCES, "transport.audio_source"
    )
    return TransportRequest(
        type=_LIVEKIT,
        url=url,
        room_name=room_name,
        audio_source=audio_source,
        worker_token=worker_token,
    )


def _seed_refusals(body: Mapping[str, Any], limits: LimitsConfig) -> None:
    """The seed's own 400s, before any 422 the same body also deserves (GAP-ERR-5)."""
    transport = body.get("transport")
    if isinstance(transport, dict):
        kind = transport.get("type")
        if isinstance(kind, str) and kind != _LIVEKIT:
            raise InvalidRequest(
                "transport.unsupported",
                f"Transport `{kind}` is not available for this endpoint; use `livekit`.",
                param="transport.type",
            )
    reserved_key(body.get("metadata"), limits)


def _body_object(body: Any) -> Mapping[str, Any]:
    if type(body) is dict:  # what both doors pass
        return body
    if body is None:
        raise Unprocessable("validation.required", "A request body is required.")
    if not isinstance(body, Mapping):
        raise InvalidRequest("body.not_object", "The request body must be a JSON object.")
    return body


def _metadata(body: Mapping[str, Any], limits: LimitsConfig) -> dict[str, Any]:
    if "metadata" not in body:
        return {}
    return check_metadata(body["metadata"], limits)


def _common(body: Mapping[str, Any], settings: Settings) -> tuple[str, int, int, str]:
    avatar_id = _required_string(body, "avatar_id", "avatar_id")
    idle = _integer(
        body,
        "idle_timeout_seconds",
        settings.idle_timeout_default_seconds,
        settings.idle_timeout_min_seconds,
        settings.idle_timeout_max_seconds,
    )
    max_duration = _integer(
        body,
        "max_duration_seconds",
        settings.max_duration_default_seconds,
        settings.max_duration_min_seconds,
        settings.max_duration_ceiling_seconds,
    )
    quality = _enum(body, "quality", settings.default_quality, QUALITIES, "quality")
    return avatar_id, idle, max_duration, quality


def parse_session_request(body: Any, settings: Settings, limits: LimitsConfig) -> SessionRequest:
    """Validate a ``POST /v1/sessions`` body; raise the contract's error for the first fault.

    A body the door has read already (``plain_create``) comes as its ``SessionRequest``: that
    is the answer this function gives for it, so it is not read twice. A plainly valid body is
    read in one pass first (``_plain_session_request``: the fast path of ``plain_create``)."""
    if type(body) is SessionRequest:
        return body
    request = _plain_session_request(body, settings)
    return _parse_session_request(body, settings, limits) if request is None else request


def plain_create(params: Mapping[str, Any], settings: Settings) -> SessionRequest | None:
    """The request of a ``createSession`` call whose parameters are certainly fine, or ``None``.

    A fast path beside its reference, the two general steps (the pipeline checks every
    request's values with ``sim.values.check_values``, and the create then parses its body):
    ``make bench`` prints what it saves a month. For the parameters clients send (a plain body,
    an ASCII ``Idempotency-Key``) it reads them once, and answers only when both steps would
    pass: ``check_values`` would accept them (at ``settings.json_max_depth``) and
    ``parse_session_request`` would give the returned request. Anything else (``None``) takes
    both general steps, in their order, so every refusal is theirs. It never raises: a refusal
    found here could come before one that ``check_values`` gives first. A property test holds
    it to the general steps.
    """
    body = None
    for name, value in params.items():
        if name == "body":
            body = value
        elif type(name) is not str or not (
            value is None or (type(value) is str and value.isascii())
        ):
            return None
    if settings.json_max_depth < 2:  # the body and its transport are two levels
        return None
    return _plain_session_request(body, settings)


def _parse_session_request(body: Any, settings: Settings, limits: LimitsConfig) -> SessionRequest:
    """The full path of ``parse_session_request``: every check, in the order the module says."""
    body = _body_object(body)
    _seed_refusals(body, limits)
    _unknown_fields(body, _SESSION_FIELDS)
    avatar_id, idle, max_duration, quality = _common(body, settings)
    transport = _transport(body, settings)
    metadata = _metadata(body, limits)
    return SessionRequest(
        avatar_id=avatar_id,
        transport=transport,
        idle_timeout_seconds=idle,
        max_duration_seconds=max_duration,
        metadata=metadata,
        quality=quality,
    )


def _plain_session_request(body: Any, settings: Settings) -> SessionRequest | None:
    """The request a body that is certainly valid asks for, or ``None`` to take the full path.

    A fast path beside its reference, the full path (see ``plain_create``). It reads a body like
    the ones clients send straight through and gives up (``None``) at
    the first value it does not take as it is: a field it does not know, a value of another
    type (a whole-number float, a ``bool`` for an integer), one out of range, a string that is
    not ASCII, any metadata. Given up, the full path decides which error the body gets, in its
    order; taken, a property test holds its answer to the full path's. It never raises, and
    every value it takes is a JSON value by type.
    """
    if type(body) is not dict or not _SESSION_FIELDS.issuperset(body) or "metadata" in body:
        return None
    raw = body.get("transport")
    if type(raw) is not dict or raw.get("type") != _LIVEKIT or not _LIVEKIT_FIELDS.issuperset(raw):
        return None
    avatar_id = body.get("avatar_id")
    url = raw.get("url")
    room_name = raw.get("room_name")
    worker_token = raw.get("worker_token")
    if (
        type(avatar_id) is not str
        or not avatar_id
        or not avatar_id.isascii()
        or type(url) is not str
        or _WSS.match(url) is None
        or not url.isascii()
        or type(room_name) is not str
        or not room_name
        or not room_name.isascii()
        or (
            "worker_token" in raw
            and (type(worker_token) is not str or not worker_token or not worker_token.isascii())
        )
    ):
        return None
    idle = body.get("idle_timeout_seconds", settings.idle_timeout_default_seconds)
    max_duration = body.get("max_duration_seconds", settings.max_duration_default_seconds)
    quality = body.get("quality", settings.default_quality)
    audio_source = raw.get("audio_source", settings.default_audio_source)
    if (
        type(idle) is not int
        or not settings.idle_timeout_min_seconds <= idle <= settings.idle_timeout_max_seconds
        or type(max_duration) is not int
        or not settings.max_duration_min_seconds
        <= max_duration
        <= settings.max_duration_ceiling_seconds
        or type(quality) is not str
        or quality not in QUALITIES
        or type(audio_source) is not str
        or audio_source not in AUDIO_SOURCES
    ):
        return None
    transport = tuples.new(TransportRequest, (_LIVEKIT, url, room_name, audio_source, worker_token))
    return tuples.new(SessionRequest, (avatar_id, transport, idle, max_duration, {}, quality))


def parse_pipecat_request(body: Any, settings: Settings) -> PipecatRequest:
    """Validate a ``POST /v1/pipecat/sessions`` body (GAP-PIPE-1)."""
    body = _body_object(body)
    _unknown_fields(body, _PIPECAT_FIELDS)
    avatar_id, idle, max_duration, quality = _common(body, settings)
    relay_type = _enum(body, "relay_type", RELAY_TYPES[0], RELAY_TYPES, "relay_type")
    return PipecatRequest(
        avatar_id=avatar_id,
        idle_timeout_seconds=idle,
        max_duration_seconds=max_duration,
        quality=quality,
        relay_type=relay_type,
    )
