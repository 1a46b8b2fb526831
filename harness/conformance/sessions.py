"""Scenario checks of ``POST /v1/sessions``: defaults, echoes, bounds, the seed's own refusals,
the per-key cap, the create rate limit, idempotency keys and the pipecat create.

Every body is ``Context.session_body``: all fields the seed lists for a request, so a refusal can
only come from the one value a check changes. Every bound the seed states is tried at both
edges: the edge value must be accepted, one past it refused. A refusal the seed gives no status
for may be 400 or 422 (the seed's table names 422 for validation and calls the type-to-status
mapping rough); the seed's own refusals (``transport.unsupported``, ``metadata.reserved_key``,
``concurrent_sessions``, ``rate_limit``) are held to exactly what it states.

Each check declares the sessions it creates and the key it may use (``any``: the run lends the
other organization's key too when it has one), so the run can keep every key within the create
rate limit. Readings the seed leaves open all pass: a plan may refuse a quality tier; a cap may
count queued sessions or only placed ones; a rate limiter may be a fixed window, a sliding window
or a token bucket.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import Any

from harness.conformance.checks import (
    LATE,
    CheckFailed,
    Incomplete,
    envelope_of,
    is_rate_limited,
    scenario_check,
)
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
    """A create that must succeed (ended at once); what stops it for other reasons (credits,
    capacity, a transport the target refuses) leaves the check incomplete."""
    try:
        session = ctx.created(exchange)
    except CheckFailed:
        code = refusal_code(exchange)
        raise CheckFailed(f"{what}: refused with {exchange.status} {code!r}", exchange) from None
    ctx.end(str(session["id"]))
    return session


def _end_if_created(ctx: Context, exchange: Exchange) -> None:
    """End the session a create that should have been refused made anyway."""
    if is_success(exchange):
        body = exchange.json()
        session = body.get("session", body) if isinstance(body, dict) else None
        if isinstance(session, dict) and isinstance(session.get("id"), str):
            ctx.end(session["id"])


@scenario_check("session_defaults", "RES-SESS-3", creates=2, key="any")
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


#: Statuses with which a plan may refuse a quality tier it does not offer (the seed lists the
#: tiers but not which plan offers which).
_TIER_REFUSALS = (400, 402, 403, 422)


@scenario_check("session_request_echo", "RES-SESS-7", "RES-TRN-1", creates=4, key="any")
def session_request_echo(ctx: Context) -> None:
    """Each quality tier the plan offers is answered back (a plan may refuse a tier, with the
    envelope); the session answers the avatar, the livekit transport's type, url and room_name,
    and the metadata it was created with."""
    offered = 0
    for quality in ("mock", "lite", "standard", "pro"):
        body = ctx.session_body(f"echo-{quality}", quality=quality)
        exchange = ctx.create_session(body)
        if exchange.status in _TIER_REFUSALS and envelope_of(exchange) is not None:
            continue
        session = _accepted(ctx, exchange, f"a create with quality {quality!r}")
        offered += 1
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
        ctx.proves(exchange)
    if not offered:
        raise CheckFailed("every quality tier was refused: a session cannot be created at all")


def _without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


@scenario_check("session_create_bounds", "EP-SESS-1", creates=6, key="any")
def session_create_bounds(ctx: Context) -> None:
    """Timeouts at their edges (1 and 600, 1 and 3600) and metadata just under 8 KB are
    accepted; 0, 601, 0 and 3601 are refused with the envelope."""
    fits = {"note": "x" * _METADATA_FITS}
    low_idle, high_idle = SEED.idle_min, SEED.idle_max
    low_max, high_max = SEED.max_duration_min, SEED.max_duration_ceiling
    accepted: list[tuple[str, dict[str, Any]]] = [
        (f"idle {low_idle}, max {high_max}",
         {"idle_timeout_seconds": low_idle, "max_duration_seconds": high_max}),
        (f"idle {high_idle}, max {low_max}, metadata under 8 KB",
         {"idle_timeout_seconds": high_idle, "max_duration_seconds": low_max, "metadata": fits}),
    ]  # fmt: skip
    refused: list[tuple[str, dict[str, Any]]] = [
        (f"idle_timeout_seconds {low_idle - 1}", {"idle_timeout_seconds": low_idle - 1}),
        (f"idle_timeout_seconds {high_idle + 1}", {"idle_timeout_seconds": high_idle + 1}),
        (f"max_duration_seconds {low_max - 1}", {"max_duration_seconds": low_max - 1}),
        (f"max_duration_seconds {high_max + 1}", {"max_duration_seconds": high_max + 1}),
    ]
    for what, fields in accepted:
        exchange = ctx.create_session(ctx.session_body("bounds", **fields))
        session = _accepted(ctx, exchange, f"a create with {what}")
        for name in ("idle_timeout_seconds", "max_duration_seconds"):
            asked = fields.get(name)
            if name == "idle_timeout_seconds" and session.get(name) != asked:
                raise CheckFailed(f"{name} {asked} answered {session.get(name)!r}", exchange)
            if name == "max_duration_seconds" and asked == low_max and session.get(name) != asked:
                raise CheckFailed(f"{name} {asked} answered {session.get(name)!r}", exchange)
    for what, fields in refused:
        exchange = ctx.create_session(ctx.session_body("bounds", **fields))
        _end_if_created(ctx, exchange)
        expect_refused(exchange, f"a create with {what}")
        ctx.proves(exchange)


@scenario_check("session_create_invalid", "EP-SESS-1", creates=6, key="any")
def session_create_invalid(ctx: Context) -> None:
    """Metadata over 8 KB or not an object, an unknown quality, no avatar_id, no transport and
    an avatar that does not exist are refused with the envelope."""
    too_big = {"note": "x" * _METADATA_TOO_BIG}
    refused: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], tuple[int, ...]]] = [
        ("metadata over 8 KB", lambda b: {**b, "metadata": too_big}, ()),
        ("metadata that is not an object", lambda b: {**b, "metadata": ["x"]}, ()),
        ("quality 'ultra'", lambda b: {**b, "quality": "ultra"}, ()),
        ("no avatar_id", lambda b: _without(b, "avatar_id"), ()),
        ("no transport", lambda b: _without(b, "transport"), ()),
        ("an avatar that does not exist",
         lambda b: {**b, "avatar_id": "av_conformance_" + uuid.uuid4().hex}, (400, 404, 422)),
    ]  # fmt: skip
    for what, edit, statuses in refused:
        exchange = ctx.create_session(edit(ctx.session_body("invalid")))
        _end_if_created(ctx, exchange)
        expect_refused(exchange, f"a create with {what}", *statuses)
        ctx.proves(exchange)


@scenario_check("transport_unsupported", "EP-SESS-2", creates=3, key="any")
def transport_unsupported(ctx: Context) -> None:
    """websocket, pipecat and any other transport type answer 400 invalid_request code
    transport.unsupported param transport.type."""
    for kind in ("websocket", "pipecat", "carrier-pigeon"):
        exchange = ctx.create_session(ctx.session_body("transport", transport={"type": kind}))
        _end_if_created(ctx, exchange)
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


@scenario_check("reserved_metadata_key", "EP-SESS-3", creates=2, key="any")
def reserved_metadata_key(ctx: Context) -> None:
    """An _avatar.* metadata key other than _avatar.debug_record answers 400 invalid_request
    metadata.reserved_key; _avatar.debug_record true is accepted."""
    metadata = {SEED.debug_record_key: True, "conformance": "avatar-sim"}
    exchange = ctx.create_session(ctx.session_body("debug-record", metadata=metadata))
    _accepted(ctx, exchange, f"a create with {SEED.debug_record_key} true")
    reserved = {SEED.reserved_metadata_prefix + "conformance_probe": True}
    exchange = ctx.create_session(ctx.session_body("reserved", metadata=reserved))
    _end_if_created(ctx, exchange)
    error = expect_refused(exchange, "an unknown _avatar.* metadata key", 400)
    if error.get("type") != "invalid_request" or error.get("code") != "metadata.reserved_key":
        raise CheckFailed(
            f"an unknown _avatar.* key answered {error.get('type')!r}/{error.get('code')!r}, not "
            "invalid_request/metadata.reserved_key",
            exchange,
        )


def _placed(session: dict[str, Any]) -> bool:
    """Whether a session is on a worker: started, running or draining, or stamped started."""
    return session.get("status") in ("starting", "running", "ending") or bool(
        session.get("started_at")
    )


#: Target seconds the harness lets a session take to be placed on a worker (no bound is stated
#: beyond the start-up timeout, after which it must have failed).
_PLACEMENT_SECONDS = 60.0


@scenario_check(
    "concurrent_sessions_refused", "LIM-1", "EP-SESS-4", creates=4, key="any", budget=120
)
def concurrent_sessions_refused(ctx: Context) -> None:
    """A second live session on the same key is 429 quota_exceeded concurrent_sessions (once
    the first is placed, for a cap that counts only placed sessions)."""
    _, first = ctx.new_session("concurrency-1")
    first_id = str(first["id"])
    try:
        for attempt in range(2):
            exchange = ctx.create_session(ctx.session_body("concurrency-2"), settle=False)
            if is_success(exchange):
                _end_if_created(ctx, exchange)
                current = ctx.get_session(first_id)[1]
                if current.get("status") in TERMINAL:
                    raise Incomplete("the first session ended on its own before the second create")
                if attempt == 0 and not _placed(current):
                    # A cap may count only placed sessions: try again once the first is placed.
                    current = ctx.poll(
                        lambda: ctx.get_session(first_id)[1],
                        lambda s: _placed(s) or s.get("status") in TERMINAL,
                        within=_PLACEMENT_SECONDS,
                        step=1.0,
                        why="the first session to be placed",
                    )
                    if not _placed(current) or current.get("status") in TERMINAL:
                        raise Incomplete(
                            "the first session was never placed, and a cap may count only "
                            "placed sessions"
                        )
                    continue
                raise CheckFailed(
                    f"a second concurrent session on one key was accepted while the first was "
                    f"{current.get('status')!r}",
                    exchange,
                )
            if exchange.status != 429 or refusal_code(exchange) != "concurrent_sessions":
                raise CheckFailed(
                    f"a second concurrent session answered {exchange.status} "
                    f"{refusal_code(exchange)!r}, not 429 concurrent_sessions",
                    exchange,
                )
            if refusal_type(exchange) != "quota_exceeded":
                raise CheckFailed(
                    f"concurrent_sessions with type {refusal_type(exchange)!r}", exchange
                )
            ctx.proves(exchange)
            return
    finally:
        ctx.settle(ctx.creator)


@scenario_check(
    "create_rate_limit", "LIM-3", "EP-SESS-5", order=10, creates=RATE_LIMIT, key="api",
    quiet=True, budget=2 * RATE_WINDOW_SECONDS + 30,
)  # fmt: skip
def create_rate_limit(ctx: Context) -> None:
    """After a quiet spell a key's first 10 session creates are all accepted; creates in quick
    succession are then refused with 429 rate_limit before twice the limit (a fixed window's
    boundary) plus any refill while the burst lasts has gone through. (A limit of up to twice
    the seed's cannot be told from a fixed window at its boundary by one burst.)"""
    pacer = ctx.pacer(ctx.creator)
    ctx.wait(pacer.quiet_at(ctx.now()) - ctx.now(), "a quiet spell before the rate-limit burst")
    started = ctx.now()
    sent = accepted = 0
    while True:
        elapsed = max(ctx.now() - started, 0.0)
        ceiling = 2 * RATE_LIMIT + math.floor(elapsed * RATE_LIMIT / RATE_WINDOW_SECONDS)
        if accepted > ceiling:
            raise CheckFailed(
                f"{accepted} creates were accepted within {elapsed:.1f} s without a 429; the "
                f"limit is {RATE_LIMIT} per minute (at most {ceiling} across a window boundary)"
            )
        if elapsed > RATE_WINDOW_SECONDS:
            raise Incomplete(
                f"the burst lasted longer than a window ({elapsed:.0f} s for {sent} creates), "
                "so it shows no limit"
            )
        exchange = ctx.target.request(
            "POST", "/v1/sessions", role=ctx.creator, json_body=ctx.session_body(f"rate-{sent}"),
            operation="createSession",
        )  # fmt: skip
        sent += 1
        pacer.record(ctx.now())
        ctx.remember(exchange, ctx.creator)
        if is_success(exchange):
            accepted += 1
            _end_if_created(ctx, exchange)
            continue
        if is_rate_limited(exchange):
            if sent <= RATE_LIMIT:
                raise CheckFailed(
                    f"create {sent} after a quiet spell was refused as over the limit of "
                    f"{RATE_LIMIT} per minute",
                    exchange,
                )
            ctx.proves(exchange)
            return
        if exchange.status == 429 and refusal_code(exchange) == "concurrent_sessions":
            if not ctx.settle(ctx.creator):
                raise Incomplete("blocked: an ended session of the burst did not drain")
            continue
        error = envelope_of(exchange)
        code = None if error is None else error.get("code")
        raise CheckFailed(f"a create in the burst answered {exchange.status} {code!r}", exchange)


@scenario_check("idempotency_key_length", "LIM-6", creates=4, key="any")
def idempotency_key_length(ctx: Context) -> None:
    """An Idempotency-Key of 1 and of 255 characters is accepted; an empty one and one of 256
    characters are refused with the envelope."""
    for length in (SEED.idempotency_key_min, SEED.idempotency_key_max):
        key = uuid.uuid4().hex[:length].ljust(length, "k")
        exchange = ctx.create_session(ctx.session_body("idem"), {"Idempotency-Key": key})
        _accepted(ctx, exchange, f"an Idempotency-Key of {length} characters")
    for key in ("k" * (SEED.idempotency_key_min - 1), "k" * (SEED.idempotency_key_max + 1)):
        exchange = ctx.create_session(ctx.session_body("idem"), {"Idempotency-Key": key})
        _end_if_created(ctx, exchange)
        expect_refused(exchange, f"an Idempotency-Key of {len(key)} characters")
        ctx.proves(exchange)


@scenario_check("idempotency_window", "LIM-5", order=LATE + 50, creates=2, key="any")
def idempotency_window(ctx: Context) -> None:
    """After the 24-hour window an Idempotency-Key is free again: the same key with another
    body creates a new session instead of answering 409."""
    key = f"conformance-window-{uuid.uuid4()}"
    body = ctx.session_body("window")
    first = _accepted(ctx, ctx.create_session(body, {"Idempotency-Key": key}), "a keyed create")
    ctx.wait(
        SEED.idempotency_window_seconds + 1, "the 24-hour idempotency window", extends_budget=True
    )
    other = dict(body, quality="lite")
    exchange = ctx.create_session(other, {"Idempotency-Key": key})
    if exchange.status == 409:
        raise CheckFailed("an Idempotency-Key 24 hours old still answered 409", exchange)
    second = _accepted(ctx, exchange, "a create reusing a key after 24 hours")
    if second.get("id") == first.get("id"):
        raise CheckFailed("a key reused after 24 hours replayed the old session", exchange)
    ctx.proves(exchange)


@scenario_check("pipecat_session", "EP-PIPE-1", creates=1, key="any")
def pipecat_session(ctx: Context) -> None:
    """POST /v1/pipecat/sessions with an avatar answers {object: pipecat.session, relay,
    session} with a websocket relay and a session."""
    path = "/v1/pipecat/sessions"
    exchange = ctx.create_session({"avatar_id": ctx.avatar()}, path=path)
    if exchange.status in (402, 429, 503):
        code = refusal_code(exchange) or exchange.status
        raise Incomplete(f"the target refused a pipecat session ({code})")
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
    ctx.proves(exchange)
