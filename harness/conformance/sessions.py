"""Scenario checks of ``POST /v1/sessions``: defaults, echoes, bounds, the seed's own refusals,
the per-key cap, the create rate limit, idempotency keys and the pipecat create.

Every body is ``Context.session_body``: all fields the seed lists for a request, so a refusal can
only come from the one value a check changes. Every bound the seed states is tried at both
edges: the edge value must be accepted, one past it refused. A refusal the seed gives no status
for may be 400 or 422 (the seed's table names 422 for validation and calls the type-to-status
mapping rough); the seed's own refusals (``transport.unsupported``, ``metadata.reserved_key``,
``concurrent_sessions``, ``rate_limit``) are held to exactly what it states.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from harness.conformance.checks import CheckFailed, Skipped, envelope_of, scenario_check
from harness.conformance.context import (
    TERMINAL,
    Context,
    expect_status,
    is_success,
    refusal_code,
    refusal_type,
)
from harness.conformance.scenarios import expect_refused
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__: list[str] = []

#: The seed's create limit per key and window (LIM-3).
RATE_LIMIT = SEED.creates_per_window
RATE_WINDOW_SECONDS = SEED.rate_window_seconds
#: Metadata sizes around the seed's 8 KB: under it whether a KB is 1000 or 1024 bytes and
#: however the JSON around the value is spaced, and over it either way.
_METADATA_FITS = SEED.metadata_max_bytes * 1000 // 1024 - 100
_METADATA_TOO_BIG = SEED.metadata_max_bytes + 200
_IDLE = 45  # an accepted idle timeout other than the default


def _accepted(ctx: Context, exchange: Exchange, what: str) -> dict[str, Any]:
    """A create that must succeed (ended at once); a refusal for capacity skips the check."""
    if not is_success(exchange) and exchange.status not in (402, 429, 503):
        raise CheckFailed(f"{what}: refused with {exchange.status}", exchange)
    session = ctx.created(exchange)
    ctx.end(str(session["id"]))
    return session


@scenario_check("session_defaults", "RES-SESS-3")
def session_defaults(ctx: Context) -> None:
    """Without timeouts a session answers the seed's defaults (idle 30 s, max 600 s clamped to
    the plan); with 3600 requested it answers the plan's ceiling, which also clamps the default."""
    body = ctx.session_body("defaults")
    del body["idle_timeout_seconds"], body["max_duration_seconds"]
    default = _accepted(ctx, ctx.create_session(body), "a create without timeouts")
    asked = SEED.max_duration_ceiling
    exchange = ctx.create_session(
        ctx.session_body("ceiling", idle_timeout_seconds=_IDLE, max_duration_seconds=asked)
    )
    ceiling = _accepted(ctx, exchange, f"a create with max_duration_seconds {asked}")
    if default.get("idle_timeout_seconds") != SEED.idle_default:
        raise CheckFailed(
            f"the default idle_timeout_seconds is {default.get('idle_timeout_seconds')!r}, "
            f"not {SEED.idle_default}"
        )
    if ceiling.get("idle_timeout_seconds") != _IDLE:
        raise CheckFailed(
            f"idle_timeout_seconds {_IDLE} answered {ceiling.get('idle_timeout_seconds')!r}",
            exchange,
        )
    plan_limit = ceiling.get("max_duration_seconds")
    if not isinstance(plan_limit, int) or not SEED.max_duration_min <= plan_limit <= asked:
        raise CheckFailed(f"max_duration_seconds {asked} answered {plan_limit!r}", exchange)
    expected = min(SEED.max_duration_default, plan_limit)
    if default.get("max_duration_seconds") != expected:
        raise CheckFailed(
            f"the default max_duration_seconds is {default.get('max_duration_seconds')!r}, not "
            f"{SEED.max_duration_default} clamped to the plan's {plan_limit} ({expected})"
        )


@scenario_check("session_request_echo", "RES-SESS-7", "RES-TRN-1")
def session_request_echo(ctx: Context) -> None:
    """Each quality tier is accepted and answered back; the session answers the avatar, the
    livekit transport's type, url and room_name, and the metadata it was created with."""
    for quality in ("mock", "lite", "standard", "pro"):
        body = ctx.session_body(f"echo-{quality}", quality=quality)
        exchange = ctx.create_session(body)
        session = _accepted(ctx, exchange, f"a create with quality {quality!r}")
        transport = session.get("transport")
        sent = body["transport"]
        if session.get("quality") != quality:
            raise CheckFailed(f"quality {quality!r} answered {session.get('quality')!r}", exchange)
        if session.get("avatar_id") != body["avatar_id"]:
            raise CheckFailed(f"avatar_id answered {session.get('avatar_id')!r}", exchange)
        if session.get("metadata") != body["metadata"]:
            raise CheckFailed(f"metadata answered {session.get('metadata')!r}", exchange)
        if not isinstance(transport, dict):
            raise CheckFailed(f"transport answered {transport!r}", exchange)
        for name in ("type", "url", "room_name"):
            if transport.get(name) != sent[name]:
                raise CheckFailed(
                    f"transport.{name} {sent[name]!r} answered {transport.get(name)!r}", exchange
                )


def _without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


@scenario_check("session_create_bounds", "EP-SESS-1")
def session_create_bounds(ctx: Context) -> None:
    """Timeouts at their edges (1 and 600, 1 and 3600) and metadata just under 8 KB are
    accepted; 0, 601, 3601, over 8 KB of metadata, an unknown quality, a missing avatar_id or
    transport, non-object metadata and an unknown avatar are refused with the envelope."""
    fits = {"note": "x" * _METADATA_FITS}
    too_big = {"note": "x" * _METADATA_TOO_BIG}
    low_idle, high_idle = SEED.idle_min, SEED.idle_max
    low_max, high_max = SEED.max_duration_min, SEED.max_duration_ceiling
    accepted: list[tuple[str, dict[str, Any]]] = [
        (f"idle {low_idle}, max {high_max}",
         {"idle_timeout_seconds": low_idle, "max_duration_seconds": high_max}),
        (f"idle {high_idle}, max {low_max}, metadata under 8 KB",
         {"idle_timeout_seconds": high_idle, "max_duration_seconds": low_max, "metadata": fits}),
    ]  # fmt: skip
    refused: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], tuple[int, ...]]] = [
        (f"idle_timeout_seconds {low_idle - 1}",
         lambda b: {**b, "idle_timeout_seconds": low_idle - 1}, ()),
        (f"idle_timeout_seconds {high_idle + 1}",
         lambda b: {**b, "idle_timeout_seconds": high_idle + 1}, ()),
        (f"max_duration_seconds {low_max - 1}",
         lambda b: {**b, "max_duration_seconds": low_max - 1}, ()),
        (f"max_duration_seconds {high_max + 1}",
         lambda b: {**b, "max_duration_seconds": high_max + 1}, ()),
        ("metadata over 8 KB", lambda b: {**b, "metadata": too_big}, ()),
        ("metadata that is not an object", lambda b: {**b, "metadata": ["x"]}, ()),
        ("quality 'ultra'", lambda b: {**b, "quality": "ultra"}, ()),
        ("no avatar_id", lambda b: _without(b, "avatar_id"), ()),
        ("no transport", lambda b: _without(b, "transport"), ()),
        ("an avatar that does not exist",
         lambda b: {**b, "avatar_id": "av_conformance_" + uuid.uuid4().hex}, (400, 404, 422)),
    ]  # fmt: skip
    for what, fields in accepted:
        exchange = ctx.create_session(ctx.session_body("bounds", **fields))
        session = _accepted(ctx, exchange, f"a create with {what}")
        for name in ("idle_timeout_seconds", "max_duration_seconds"):
            asked = fields.get(name)
            if name == "idle_timeout_seconds" and session.get(name) != asked:
                raise CheckFailed(f"{name} {asked} answered {session.get(name)!r}", exchange)
            if name == "max_duration_seconds" and asked == low_max and session.get(name) != asked:
                raise CheckFailed(f"{name} {asked} answered {session.get(name)!r}", exchange)
    for what, edit, statuses in refused:
        exchange = ctx.create_session(edit(ctx.session_body("bounds")))
        if is_success(exchange):
            ctx.end(str(exchange.json().get("id")))
        expect_refused(exchange, f"a create with {what}", *statuses)


@scenario_check("transport_unsupported", "EP-SESS-2")
def transport_unsupported(ctx: Context) -> None:
    """websocket, pipecat and any other transport type answer 400 invalid_request code
    transport.unsupported param transport.type."""
    for kind in ("websocket", "pipecat", "carrier-pigeon"):
        exchange = ctx.create_session(ctx.session_body("transport", transport={"type": kind}))
        if is_success(exchange):
            ctx.end(str(exchange.json().get("id")))
        what = f"transport type {kind!r}"
        error = expect_refused(exchange, what, 400)
        for name, wanted in (
            ("type", "invalid_request"),
            ("code", "transport.unsupported"),
            ("param", "transport.type"),
        ):
            if error.get(name) != wanted:
                raise CheckFailed(
                    f"{what}: error.{name} {error.get(name)!r}, not {wanted!r}", exchange
                )


@scenario_check("reserved_metadata_key", "EP-SESS-3")
def reserved_metadata_key(ctx: Context) -> None:
    """An _avatar.* metadata key other than _avatar.debug_record answers 400 invalid_request
    metadata.reserved_key; _avatar.debug_record true is accepted."""
    metadata = {SEED.debug_record_key: True, "conformance": "avatar-sim"}
    exchange = ctx.create_session(ctx.session_body("debug-record", metadata=metadata))
    _accepted(ctx, exchange, f"a create with {SEED.debug_record_key} true")
    reserved = {SEED.reserved_metadata_prefix + "conformance_probe": True}
    exchange = ctx.create_session(ctx.session_body("reserved", metadata=reserved))
    if is_success(exchange):
        ctx.end(str(exchange.json().get("id")))
    error = expect_refused(exchange, "an unknown _avatar.* metadata key", 400)
    if error.get("type") != "invalid_request" or error.get("code") != "metadata.reserved_key":
        raise CheckFailed(
            f"an unknown _avatar.* key answered {error.get('type')!r}/{error.get('code')!r}, not "
            "invalid_request/metadata.reserved_key",
            exchange,
        )


@scenario_check("concurrent_sessions_refused", "LIM-1", "EP-SESS-4")
def concurrent_sessions_refused(ctx: Context) -> None:
    """A second live session on the same key is 429 quota_exceeded concurrent_sessions."""
    _, first = ctx.new_session("concurrency-1")
    try:
        exchange = ctx.create_session(ctx.session_body("concurrency-2"), settle=False)
        if is_success(exchange):
            if ctx.get_session(str(first["id"]))[1].get("status") in TERMINAL:
                raise Skipped("the first session ended on its own before the second create")
            raise CheckFailed("a second concurrent session on one key was accepted", exchange)
        if exchange.status == 429 and refusal_type(exchange) == "rate_limit":
            raise Skipped("the create rate limit answered first")
        if exchange.status != 429 or refusal_code(exchange) != "concurrent_sessions":
            raise CheckFailed(
                f"a second concurrent session answered {exchange.status} "
                f"{refusal_code(exchange)!r}, not 429 concurrent_sessions",
                exchange,
            )
        if refusal_type(exchange) != "quota_exceeded":
            raise CheckFailed(f"concurrent_sessions with type {refusal_type(exchange)!r}", exchange)
    finally:
        ctx.settle()


def _target_seconds(ctx: Context) -> float:
    """The target's clock: the simulator's own with the admin token, else the wall clock."""
    if ctx.admin:
        exchange = ctx.target.request("GET", "/_sim/clock", role="admin")
        seconds = expect_status(exchange, what="GET /_sim/clock").get("seconds")
        return float(seconds)
    return time.monotonic()


@scenario_check("create_rate_limit", "LIM-3", "EP-SESS-5", order=10)
def create_rate_limit(ctx: Context) -> None:
    """Session creates in quick succession are refused with 429 rate_limit once a key has made
    10 in a minute (allowing for any refill while the burst lasts); after a quiet minute the
    first 10 are all accepted."""
    cleared = ctx.has_time
    if cleared:
        ctx.settle()
        ctx.wait(RATE_WINDOW_SECONDS + 1, "a quiet minute before the rate-limit burst")
    started = _target_seconds(ctx)
    accepted = 0
    for attempt in range(3 * RATE_LIMIT):
        exchange = ctx.target.request(
            "POST", "/v1/sessions", json_body=ctx.session_body(f"rate-{attempt}"),
            operation="createSession",
        )  # fmt: skip
        ctx.remember(exchange)
        if is_success(exchange):
            accepted += 1
            ctx.end(str(exchange.json().get("id")))
            continue
        if exchange.status == 429 and refusal_type(exchange) == "rate_limit":
            elapsed = max(_target_seconds(ctx) - started, 0.0)
            refill = math.floor(elapsed * RATE_LIMIT / RATE_WINDOW_SECONDS)
            if accepted > RATE_LIMIT + refill:
                raise CheckFailed(
                    f"{accepted} creates were accepted within {elapsed:.1f} s before the first "
                    f"429; the limit is {RATE_LIMIT} per minute",
                    exchange,
                )
            if cleared and accepted < RATE_LIMIT:
                raise CheckFailed(
                    f"the {accepted + 1}st create after a quiet minute was refused as over the "
                    f"limit of {RATE_LIMIT} per minute",
                    exchange,
                )
            return
        if exchange.status == 429 and refusal_code(exchange) == "concurrent_sessions":
            raise Skipped("the per-key session cap answered before the rate limit")
        error = envelope_of(exchange)
        code = None if error is None else error.get("code")
        raise CheckFailed(f"a create in the burst answered {exchange.status} {code!r}", exchange)
    raise CheckFailed(f"{3 * RATE_LIMIT} creates in quick succession were never rate limited")


@scenario_check("idempotency_key_length", "LIM-6")
def idempotency_key_length(ctx: Context) -> None:
    """An Idempotency-Key of 1 and of 255 characters is accepted; an empty one and one of 256
    characters are refused with the envelope."""
    for length in (SEED.idempotency_key_min, SEED.idempotency_key_max):
        key = uuid.uuid4().hex[:length].ljust(length, "k")
        exchange = ctx.create_session(ctx.session_body("idem"), {"Idempotency-Key": key})
        _accepted(ctx, exchange, f"an Idempotency-Key of {length} characters")
    for key in ("k" * (SEED.idempotency_key_min - 1), "k" * (SEED.idempotency_key_max + 1)):
        exchange = ctx.create_session(ctx.session_body("idem"), {"Idempotency-Key": key})
        if is_success(exchange):
            ctx.end(str(exchange.json().get("id")))
        expect_refused(exchange, f"an Idempotency-Key of {len(key)} characters")


@scenario_check("idempotency_window", "LIM-5", needs=("time",))
def idempotency_window(ctx: Context) -> None:
    """After the 24-hour window an Idempotency-Key is free again: the same key with another
    body creates a new session instead of answering 409."""
    key = f"conformance-window-{uuid.uuid4()}"
    body = ctx.session_body("window")
    first = _accepted(ctx, ctx.create_session(body, {"Idempotency-Key": key}), "a keyed create")
    ctx.wait(SEED.idempotency_window_seconds + 1, "the 24-hour idempotency window")
    other = dict(body, quality="lite")
    exchange = ctx.create_session(other, {"Idempotency-Key": key})
    if exchange.status == 409:
        raise CheckFailed("an Idempotency-Key 24 hours old still answered 409", exchange)
    second = _accepted(ctx, exchange, "a create reusing a key after 24 hours")
    if second.get("id") == first.get("id"):
        raise CheckFailed("a key reused after 24 hours replayed the old session", exchange)


@scenario_check("pipecat_session", "EP-PIPE-1")
def pipecat_session(ctx: Context) -> None:
    """POST /v1/pipecat/sessions with an avatar answers {object: pipecat.session, relay,
    session} with a websocket relay and a session."""
    path = "/v1/pipecat/sessions"
    exchange = ctx.create_session({"avatar_id": ctx.avatar()}, path=path)
    if exchange.status in (402, 429, 503):
        raise Skipped(f"the target refused a pipecat session now ({exchange.status})")
    body = expect_status(exchange, what=f"POST {path}")
    session = body.get("session") if isinstance(body, dict) else None
    if isinstance(session, dict) and isinstance(session.get("id"), str):
        ctx.end(session["id"])
    if not isinstance(body, dict) or body.get("object") != "pipecat.session":
        raise CheckFailed(f"the answer's object is {body.get('object')!r}", exchange)
    relay = body.get("relay")
    if not isinstance(relay, dict) or relay.get("type") != "websocket":
        raise CheckFailed(f"the relay is not a websocket relay: {relay!r}", exchange)
    if not isinstance(session, dict) or not str(session.get("id", "")).startswith("sess_"):
        raise CheckFailed(f"the pipecat answer's session is {session!r}", exchange)
