"""``POST /v1/sessions`` as the seed states it: which bodies are refused (and how, where the seed
says), which are accepted, and what an accepted session answers.

Why the model validates every create itself: a create the seed accepts may be refused only for
a reason the seed gives (the rate limit, a cap, no free worker, credits, an idempotency key
reused with another body), each judged by its own rule; anything else refused is a failure,
whoever sent it (a script, the fuzz). A body the seed refuses must not be accepted, and where the
seed fixes the refusal (``transport.unsupported``, ``metadata.reserved_key``) it is exactly that.
Open points are not judged: unknown fields, a livekit ``url`` that is not ``wss://``, the size of
metadata within a few percent of 8 KB (a KB of 1000 or 1024 bytes, spacing).

An accepted session answers ``queued`` and echoes what was asked: the avatar, quality, metadata
and transport; the idle timeout asked, else 30; the max duration asked, else 600, clamped to the
plan's limit. The clamp is an open point learned from the first answer that shows it (per
organization) and held.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.conformance.model.readings import Readings
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.seed import SEED
from harness.target import Exchange

__all__ = ["CREATE", "Problem", "judge_accepted", "problems_of"]

CREATE = model_rule("session_create")

#: Metadata sizes (compact JSON bytes) the seed's 8 KB surely allows, and surely does not:
#: a KB may be 1000 or 1024 bytes, and a deployment may measure the JSON with its own spacing
#: (never smaller than the compact form, a few bytes larger for a handful of keys). Between the
#: two the reading decides.
_METADATA_FITS = SEED.metadata_max_bytes * 1000 // 1024 - 64
_METADATA_TOO_BIG = SEED.metadata_max_bytes


@dataclass(frozen=True, slots=True)
class Problem:
    """Why the seed refuses a create body: the field, whether a value sits at one of the seed's
    bounds, and the exact refusal (status, type, code, param) where the seed states it."""

    field: str
    exact: tuple[int, str, str, str | None] | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """What the model makes of one create: its problems, whether it is judgeable at all,
    whether it sits at a bound the seed states (an edge), and whether every reading of the
    seed accepts it (``complete``: every field the seed lists for the transport, of the form it
    shows, and nothing the seed does not list; only then is a refusal judged)."""

    problems: tuple[Problem, ...]
    judgeable: bool
    edge: bool
    complete: bool = False


#: The top-level fields and livekit transport fields the seed lists for a create.
_FIELDS = frozenset(
    {"avatar_id", "transport", "idle_timeout_seconds", "max_duration_seconds", "metadata",
     "quality"}
)  # fmt: skip
_LIVEKIT = frozenset({"type", "url", "room_name", "worker_token", "audio_source"})


def _complete(body: dict[str, Any]) -> bool:
    """Whether every reading accepts the body's shape: the transport's every listed field, of
    the form the seed shows (the data_stream audio source), and no unlisted field (a deployment
    may require what the seed lists without saying so, or refuse the rest)."""
    transport = body.get("transport")
    if set(body) - _FIELDS or not isinstance(transport, dict) or set(transport) != _LIVEKIT:
        return False
    return (
        isinstance(transport["url"], str)  # its wss:// form is a problem of its own
        and all(isinstance(transport[k], str) and transport[k]
                for k in ("room_name", "worker_token"))
        and transport["audio_source"] == "data_stream"
    )  # fmt: skip


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bounded(
    body: dict[str, Any], name: str, low: int, high: int, out: list[Problem]
) -> tuple[bool, bool]:
    """(judgeable, at an edge) for an optional integer field within ``low..high``."""
    if name not in body:
        return True, False
    value = body[name]
    if isinstance(value, float) and value.is_integer():
        return False, False  # 30.0: an integer to JSON Schema, a float to some parsers
    number = _integer(value)
    if number is None or not low <= number <= high:
        out.append(Problem(name))
        return True, number is not None and number in (low - 1, high + 1)
    return True, number in (low, high)


def problems_of(body: Any, idempotency_key: str | None) -> Reading:
    """The seed's verdict on a session create body and its ``Idempotency-Key``."""
    out: list[Problem] = []
    judgeable, edge = True, False
    if idempotency_key is not None:
        length = len(idempotency_key)
        if not SEED.idempotency_key_min <= length <= SEED.idempotency_key_max:
            out.append(Problem("Idempotency-Key"))
        edge = length in (SEED.idempotency_key_min, SEED.idempotency_key_max) or length in (
            SEED.idempotency_key_min - 1,
            SEED.idempotency_key_max + 1,
        )
    if not isinstance(body, dict):
        return Reading((*out, Problem("body")), True, edge)
    if not isinstance(body.get("avatar_id"), str):
        out.append(Problem("avatar_id"))
    transport = body.get("transport")
    if not isinstance(transport, dict) or not isinstance(transport.get("type"), str):
        out.append(Problem("transport"))
    elif transport["type"] != "livekit":
        unsupported = (400, "invalid_request", "transport.unsupported", "transport.type")
        out.append(Problem("transport.type", unsupported))
    elif isinstance(transport.get("url"), str) and not transport["url"].startswith("wss://"):
        out.append(Problem("transport.url"))  # the seed: a wss:// address
    for name, low, high in (
        ("idle_timeout_seconds", SEED.idle_min, SEED.idle_max),
        ("max_duration_seconds", SEED.max_duration_min, SEED.max_duration_ceiling),
    ):
        ok, at_edge = _bounded(body, name, low, high, out)
        judgeable, edge = judgeable and ok, edge or at_edge
    if "metadata" in body:
        ok, at_edge = _metadata(body["metadata"], out)
        judgeable, edge = judgeable and ok, edge or at_edge
    if "quality" in body and body["quality"] not in SEED.qualities:
        out.append(Problem("quality"))
    return Reading(tuple(out), judgeable, edge, _complete(body))


def _metadata(metadata: Any, out: list[Problem]) -> tuple[bool, bool]:
    if not isinstance(metadata, dict):
        out.append(Problem("metadata"))
        return True, False
    prefix, allowed = SEED.reserved_metadata_prefix, SEED.debug_record_key
    reserved = [k for k in metadata if isinstance(k, str) and k.startswith(prefix) and k != allowed]
    if reserved:
        exact = (400, "invalid_request", "metadata.reserved_key", None)
        out.append(Problem("metadata", exact))
    if allowed in metadata and not isinstance(metadata[allowed], bool):
        out.append(Problem(f"metadata.{allowed}"))
    size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode())
    if size > _METADATA_TOO_BIG:
        out.append(Problem("metadata"))
        return True, size <= _METADATA_TOO_BIG + 16
    if size > _METADATA_FITS:
        return False, False
    return True, size >= _METADATA_FITS - 200


def _related(param: str, field: str) -> bool:
    """Whether ``param`` names ``field`` by its dot-path, or a field within it or around it."""
    return param == field or param.startswith(field + ".") or field.startswith(param + ".")


def judge_refused(reading: Reading, exchange: Exchange, error: dict[str, Any] | None) -> Verdict:
    """A create the seed refuses was answered ``exchange`` (not a 2xx)."""
    sole = reading.problems[0] if len(reading.problems) == 1 else None
    param = None if error is None else error.get("param")
    if (
        sole is not None and reading.complete and isinstance(param, str)
        and exchange.status not in (429, 503) and not _related(param, sole.field)
    ):  # fmt: skip
        return Verdict.failed(
            CREATE, exchange,
            f"a create refused for {sole.field} names param {param!r}; param is the offending "
            "field's dot-path",
        )  # fmt: skip
    if sole is None or sole.exact is None or exchange.status in (429, 503):
        return Verdict.passed(CREATE, exchange, edge=reading.edge)
    status, kind, code, param = sole.exact
    got = (
        exchange.status,
        None if error is None else error.get("type"),
        None if error is None else error.get("code"),
    )
    if got != (status, kind, code) or (param is not None and (error or {}).get("param") != param):
        shown = f"{got[0]} {got[1]}/{got[2]} param {(error or {}).get('param')!r}"
        wanted = f"{status} {kind}/{code}" + (f" param {param!r}" if param else "")
        return Verdict.failed(
            CREATE, exchange, f"a create refused for {sole.field} answered {shown}; the seed "
            f"says {wanted}",
        )  # fmt: skip
    return Verdict.passed(CREATE, exchange, edge=True)


def judge_accepted(
    body: dict[str, Any],
    session: dict[str, Any],
    exchange: Exchange,
    readings: Readings,
    org: str | None,
    edge: bool,
) -> Iterator[Verdict]:
    """An accepted create's session against what was asked."""
    wrong: list[str] = []
    if session.get("status") != "queued":
        wrong.append(f"status {session.get('status')!r}, not queued (SES-ST-1)")
    for stamp in ("started_at", "first_frame_at"):
        if session.get(stamp) is not None:
            wrong.append(f"{stamp} {session[stamp]!r} at once (set by a worker's event, later)")
    for name in ("avatar_id", "quality", "metadata"):
        if name in body and session.get(name) != body[name]:
            wrong.append(f"{name} {session.get(name)!r} for {body[name]!r} asked")
    sent, answered = body.get("transport"), session.get("transport")
    if isinstance(sent, dict):
        if not isinstance(answered, dict):
            wrong.append(f"transport {answered!r}")
        else:
            for name in ("type", "url", "room_name"):
                if name in sent and answered.get(name) != sent[name]:
                    wrong.append(f"transport.{name} {answered.get(name)!r} for {sent[name]!r}")
    idle = session.get("idle_timeout_seconds")
    wanted_idle = body.get("idle_timeout_seconds", SEED.idle_default)
    if idle != wanted_idle:
        wrong.append(f"idle_timeout_seconds {idle!r}, not {wanted_idle}")
    clamp_problem = _clamp(
        body.get("max_duration_seconds", SEED.max_duration_default),
        session.get("max_duration_seconds"),
        exchange,
        readings,
        org,
    )
    if clamp_problem is not None:
        wrong.append(clamp_problem)
    yield Verdict.judged(
        CREATE,
        exchange,
        "an accepted create answered " + "; ".join(wrong) if wrong else None,
        edge=edge,
    )


def _clamp(
    asked: Any, shown: Any, exchange: Exchange, readings: Readings, org: str | None
) -> str | None:
    """The ``max_duration_seconds`` a create answered (``shown``) is the one ``asked`` (the
    seed's default when none was) clamped to the plan's limit."""
    answered = _integer(shown)
    if answered is None:
        return f"max_duration_seconds {shown!r}"
    if answered > asked or answered < SEED.max_duration_min:
        return f"max_duration_seconds {answered} for {asked} asked"
    known = readings.get("max_duration_clamp", org)
    if answered < asked:
        return readings.hold("max_duration_clamp", answered, exchange, org)
    if known is not None and asked > known:
        return (
            f"max_duration_seconds {answered} for {asked} asked, although the plan clamped it "
            f"to {known} before"
        )
    return None
