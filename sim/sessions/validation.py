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
then each field (GAP-ERR-1, GAP-SES-11). Every bound comes from the configuration. A whole-number
float (``600.0``) is an integer, as JSON Schema counts it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from sim.config import QUALITIES, LimitsConfig, SessionConfig
from sim.errors import DomainError, InvalidRequest, Unprocessable
from sim.metadata import check_metadata, reserved_key
from sim.values import fine

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


# The parsed requests are NamedTuples rather than frozen dataclasses: as immutable, and a frozen
# dataclass's __init__ (one object.__setattr__ per field) cost about 1 us per create.


_new_tuple: Final = tuple.__new__


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


def _transport(body: Mapping[str, Any], sessions: SessionConfig) -> TransportRequest:
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
        raw, "audio_source", sessions.default_audio_source, AUDIO_SOURCES, "transport.audio_source"
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
    if type(body) is dict:  # what both doors pass; the ABC check below costs more
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


def _common(
    body: Mapping[str, Any], limits: LimitsConfig, sessions: SessionConfig
) -> tuple[str, int, int, str]:
    avatar_id = _required_string(body, "avatar_id", "avatar_id")
    idle = _integer(
        body,
        "idle_timeout_seconds",
        limits.idle_timeout_default_seconds,
        limits.idle_timeout_min_seconds,
        limits.idle_timeout_max_seconds,
    )
    max_duration = _integer(
        body,
        "max_duration_seconds",
        limits.max_duration_default_seconds,
        limits.max_duration_min_seconds,
        limits.max_duration_ceiling_seconds,
    )
    quality = _enum(body, "quality", sessions.default_quality, QUALITIES, "quality")
    return avatar_id, idle, max_duration, quality


def parse_session_request(
    body: Any, limits: LimitsConfig, sessions: SessionConfig
) -> SessionRequest:
    """Validate a ``POST /v1/sessions`` body; raise the contract's error for the first fault.

    A body the door has read already (``plain_create``) comes as its ``SessionRequest``: that
    is the answer this function gives for it, so it is not read twice."""
    if type(body) is SessionRequest:
        return body
    request = _plain_session_request(body, limits, sessions)
    return _parse_session_request(body, limits, sessions) if request is None else request


def plain_create(
    params: Mapping[str, Any], limits: LimitsConfig, sessions: SessionConfig, max_depth: int
) -> SessionRequest | None:
    """The request of a ``createSession`` call whose parameters are certainly fine, or ``None``.

    ``Platform.call`` checks every request's values (``sim.values.check_values``) before
    anything else, and the create then parses its body: two walks over the same few values,
    each a good share of what a create cost. For the parameters clients send (a plain body, an
    ASCII ``Idempotency-Key``) this reads them once, and answers only when both would pass:
    ``check_values(params, max_depth=max_depth)`` would accept them and
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
    if max_depth < 2:  # the body and its transport are two levels
        return None
    return _plain_session_request(body, limits, sessions, max_depth - 1)


def _parse_session_request(
    body: Any, limits: LimitsConfig, sessions: SessionConfig
) -> SessionRequest:
    """The full path of ``parse_session_request``: every check, in the order the module says."""
    body = _body_object(body)
    _seed_refusals(body, limits)
    _unknown_fields(body, _SESSION_FIELDS)
    avatar_id, idle, max_duration, quality = _common(body, limits, sessions)
    transport = _transport(body, sessions)
    metadata = _metadata(body, limits)
    return SessionRequest(
        avatar_id=avatar_id,
        transport=transport,
        idle_timeout_seconds=idle,
        max_duration_seconds=max_duration,
        metadata=metadata,
        quality=quality,
    )


def _plain_session_request(
    body: Any, limits: LimitsConfig, sessions: SessionConfig, metadata_depth: int = 0
) -> SessionRequest | None:
    """The request a body that is certainly valid asks for, or ``None`` to take the full path.

    Every create parses its body, and the full path spends a dozen calls on a body like the
    month's clients send. This one reads such a body straight through and gives up (``None``) at
    the first value it does not take as it is: a field it does not know, a value of another
    type (a whole-number float, a ``bool`` for an integer), one out of range, a string that is
    not ASCII, metadata the full path refuses. Given up, the full path decides which error the
    body gets, in its order; taken, a property test holds its answer to the full path's. It never
    raises. With ``metadata_depth`` (``plain_create``), the metadata's values must also be ones
    ``sim.values`` accepts at that depth: every other value it takes is a JSON value by type.
    """
    if type(body) is not dict or not _SESSION_FIELDS.issuperset(body):
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
    bounds = _bounds
    if bounds[0] is not limits or bounds[1] is not sessions:
        bounds = _read_bounds(limits, sessions)
    (
        _,
        _,
        idle_default,
        idle_min,
        idle_max,
        max_default,
        max_min,
        max_ceiling,
        quality_default,
        audio_default,
    ) = bounds
    idle = body.get("idle_timeout_seconds", idle_default)
    max_duration = body.get("max_duration_seconds", max_default)
    quality = body.get("quality", quality_default)
    audio_source = raw.get("audio_source", audio_default)
    if (
        type(idle) is not int
        or not idle_min <= idle <= idle_max
        or type(max_duration) is not int
        or not max_min <= max_duration <= max_ceiling
        or type(quality) is not str
        or quality not in QUALITIES
        or type(audio_source) is not str
        or audio_source not in AUDIO_SOURCES
    ):
        return None
    metadata: dict[str, Any] = {}
    if "metadata" in body:
        metadata = body["metadata"]
        if type(metadata) is not dict or (metadata_depth and not fine(metadata, metadata_depth)):
            return None
        try:  # the only refusals left: the full path gives them, in its order
            reserved_key(metadata, limits)
            metadata = check_metadata(metadata, limits)
        except DomainError:
            return None
    # ``tuple.__new__`` with the fields in order: what the NamedTuples' generated ``__new__``
    # does, without its Python frame (two per create).
    transport = _new_tuple(TransportRequest, (_LIVEKIT, url, room_name, audio_source, worker_token))
    return _new_tuple(SessionRequest, (avatar_id, transport, idle, max_duration, metadata, quality))


#: The configured values ``_plain_session_request`` reads, with the (frozen) configuration
#: objects they were read from: kept for the last configuration seen (a process runs one at a
#: time). Why: reading a pydantic model's attribute costs several times a plain one's, and the
#: plain path read eight of them for every create.
_bounds: tuple[Any, ...] = (None, None)


def _read_bounds(limits: LimitsConfig, sessions: SessionConfig) -> tuple[Any, ...]:
    """``_bounds`` for ``limits`` and ``sessions``, read and kept."""
    global _bounds
    _bounds = (
        limits,
        sessions,
        limits.idle_timeout_default_seconds,
        limits.idle_timeout_min_seconds,
        limits.idle_timeout_max_seconds,
        limits.max_duration_default_seconds,
        limits.max_duration_min_seconds,
        limits.max_duration_ceiling_seconds,
        sessions.default_quality,
        sessions.default_audio_source,
    )
    return _bounds


def parse_pipecat_request(
    body: Any, limits: LimitsConfig, sessions: SessionConfig
) -> PipecatRequest:
    """Validate a ``POST /v1/pipecat/sessions`` body (GAP-PIPE-1)."""
    body = _body_object(body)
    _unknown_fields(body, _PIPECAT_FIELDS)
    avatar_id, idle, max_duration, quality = _common(body, limits, sessions)
    relay_type = _enum(body, "relay_type", RELAY_TYPES[0], RELAY_TYPES, "relay_type")
    return PipecatRequest(
        avatar_id=avatar_id,
        idle_timeout_seconds=idle,
        max_duration_seconds=max_duration,
        quality=quality,
        relay_type=relay_type,
    )
