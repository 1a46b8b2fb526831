"""Scripts that drive ``POST /v1/sessions`` to where the seed's rules bite; the model judges
every create (``session_create``: validation, refusals, echoes, defaults, the plan's clamp;
``concurrency_caps``; ``create_rate_limit``; ``creates_answered_once``).

Every body is ``Context.session_body``: all fields the seed lists for a request, so a refusal can
only come from the one value a script changes. Every bound the seed states is sent at both
edges. Each script declares the sessions it creates and the key it may use (``any``: the run
lends the other organization's key too), so the run keeps every key within the rate limit; the
rate limit's own script bursts on purpose.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from harness.conformance.answers import expect_status, is_success, refusal_code
from harness.conformance.checks import (
    CheckFailed,
    Incomplete,
    NotApplicable,
    is_rate_limited,
    scenario_check,
)
from harness.conformance.context import Context
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange
from harness.conformance.watch import TERMINAL

__all__: list[str] = []

RATE_LIMIT = SEED.creates_per_window
RATE_WINDOW_SECONDS = SEED.rate_window_seconds
#: The metadata sizes tried (compact JSON bytes): under the seed's 8 KB whether a KB is 1000 or
#: 1024 bytes and however the JSON is spaced, and one byte over it either way.
_METADATA_FITS = SEED.metadata_max_bytes * 1000 // 1024 - 100
_METADATA_TOO_BIG = SEED.metadata_max_bytes + 1
_IDLE = 45  # an accepted idle timeout other than the default


def _send(ctx: Context, body: Any, headers: dict[str, str] | None = None) -> Exchange:
    """One create (paced, rate-limit refusals waited out), ended at once if it made a session."""
    exchange = ctx.create_session(body, headers, settle=True)
    _end_if_created(ctx, exchange)
    ctx.proves(exchange)
    return exchange


def _end_if_created(ctx: Context, exchange: Exchange) -> None:
    if is_success(exchange):
        body = exchange.json()
        session = body.get("session", body) if isinstance(body, dict) else None
        if isinstance(session, dict) and isinstance(session.get("id"), str):
            ctx.end(session["id"])


def _stop_unless_created(ctx: Context, exchange: Exchange) -> None:
    """A create every reading accepts: stop the script (saying why) when it made nothing."""
    if not is_success(exchange):
        ctx.created(exchange)


@scenario_check("session_defaults", creates=2, key="any")
def session_defaults(ctx: Context) -> None:
    """A create with max_duration_seconds 3600, an idle timeout of 45 and the tier pro, then
    one without timeouts (the model judges the defaults against the plan's clamp the first
    showed)."""
    ceiling = ctx.session_body(
        "ceiling", idle_timeout_seconds=_IDLE, max_duration_seconds=SEED.max_duration_ceiling,
        quality="pro",
    )  # fmt: skip
    _stop_unless_created(ctx, _send(ctx, ceiling))
    body = ctx.session_body("defaults")
    del body["idle_timeout_seconds"], body["max_duration_seconds"]
    _send(ctx, body)


@scenario_check("session_create_bounds", creates=10, key="any")
def session_create_bounds(ctx: Context) -> None:
    """Timeouts at their edges (1 and 600, 1 and 3600), metadata just under 8 KB, the tiers lite
    and standard, and one past each edge (0, 601, 0, 3601, metadata over 8 KB): the model
    judges each create."""
    fits = _sized(ctx.metadata(note=""), _METADATA_FITS)
    too_big = _sized(ctx.metadata(note=""), _METADATA_TOO_BIG)
    # The two accepted creates take the tiers no other script sends (every plan accepts each).
    bodies: list[dict[str, Any]] = [
        {"idle_timeout_seconds": SEED.idle_min, "max_duration_seconds": SEED.max_duration_ceiling,
         "quality": "lite"},
        {"idle_timeout_seconds": SEED.idle_max, "max_duration_seconds": SEED.max_duration_min,
         "metadata": fits, "quality": "standard"},
        {"idle_timeout_seconds": SEED.idle_min - 1},
        {"idle_timeout_seconds": SEED.idle_max + 1},
        {"max_duration_seconds": SEED.max_duration_min - 1},
        {"max_duration_seconds": SEED.max_duration_ceiling + 1},
        {"metadata": too_big},
    ]  # fmt: skip
    for fields in bodies:
        _send(ctx, ctx.session_body("bounds", **fields))


def _sized(metadata: dict[str, Any], size: int) -> dict[str, Any]:
    """``metadata`` with its ``note`` padded so that its compact JSON is ``size`` bytes."""
    compact = len(json.dumps(metadata, separators=(",", ":")).encode())
    return {**metadata, "note": "x" * (size - compact)}


def _without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


@scenario_check("session_create_invalid", creates=7, key="any")
def session_create_invalid(ctx: Context) -> None:
    """Metadata that is not an object, an unknown quality, a timeout that is no integer, no
    avatar_id, no transport, a livekit url that is not wss://, and an avatar that does not
    exist (the model judges each)."""
    body = ctx.session_body("invalid")
    insecure = {
        **body["transport"],
        "url": "ws://" + body["transport"]["url"].removeprefix("wss://"),
    }
    bodies = [
        {**body, "transport": insecure},
        {**body, "metadata": ["x"]},
        {**body, "quality": "ultra"},
        {**body, "max_duration_seconds": 1.5},
        _without(body, "avatar_id"),
        _without(body, "transport"),
        {**body, "avatar_id": "av_conformance_" + uuid.uuid4().hex},
    ]
    for other in bodies:
        _send(ctx, other)


@scenario_check("transport_unsupported", creates=3, key="any")
def transport_unsupported(ctx: Context) -> None:
    """websocket, pipecat and any other transport type (the model holds each to 400
    invalid_request transport.unsupported param transport.type)."""
    for kind in ("websocket", "pipecat", "carrier-pigeon"):
        _send(ctx, ctx.session_body("transport", transport={"type": kind}))


@scenario_check("reserved_metadata_key", creates=4, key="any")
def reserved_metadata_key(ctx: Context) -> None:
    """_avatar.debug_record true (accepted), another _avatar.* key and one that merely begins
    with _avatar.debug_record (each 400 invalid_request metadata.reserved_key), and
    _avatar.debug_record that is no boolean (refused): the model judges each."""
    allowed = SEED.debug_record_key
    reserved = SEED.reserved_metadata_prefix + "conformance_probe"
    for metadata in (
        ctx.metadata(**{allowed: True}),
        ctx.metadata(**{reserved: True}),
        ctx.metadata(**{allowed + "_copy": True}),
        ctx.metadata(**{allowed: "yes"}),
    ):
        _send(ctx, ctx.session_body("reserved", metadata=metadata))


def _placed(session: dict[str, Any]) -> bool:
    return session.get("status") in ("starting", "running", "ending") or bool(
        session.get("started_at")
    )


#: Target seconds a session is given to be placed (the start-up timeout, and some slack).
_PLACEMENT_SECONDS = SEED.startup_timeout_seconds + 15


@scenario_check("cap_probe", creates=3, key="any", budget=120)
def cap_probe(ctx: Context) -> None:
    """A key's second create while its first session is placed (the model holds it to 429
    concurrent_sessions, or, if accepted, reads the first again to prove both were live), then
    a create once the first has ended (its slot is free)."""
    _, first = ctx.new_session("cap-1")
    first_id = str(first["id"])
    try:
        current = ctx.poll(
            lambda: ctx.get_session(first_id)[1],
            lambda s: _placed(s) or s.get("status") in TERMINAL,
            within=_PLACEMENT_SECONDS,
            step=1.0,
            why="the first session to be placed",
        )
        if current.get("status") in TERMINAL:
            raise Incomplete(f"the first session ended {current.get('status')!r} before it ran")
        if not _placed(current):
            return  # the model's session_timers reports a session left queued
        second = ctx.create_session(ctx.session_body("cap-2"), settle=False)
        ctx.proves(second)
        _end_if_created(ctx, second)
        ctx.get_session(first_id)
    finally:
        ctx.settle(ctx.creator)
    third = ctx.create_session(ctx.session_body("cap-3"), settle=False)
    _end_if_created(ctx, third)


_PROBE_STEP_SECONDS = 2.0


@scenario_check(
    "rate_limit_bursts", creates=2 * RATE_LIMIT + 2, key="api",
    quiet=True, budget=4 * RATE_WINDOW_SECONDS + 60,
)  # fmt: skip
def rate_limit_bursts(ctx: Context) -> None:
    """After a quiet spell, creates in quick succession until one is refused rate_limit; then
    one create every two seconds until one is admitted again; then creates in quick succession
    again (the model holds the first burst to no refusal before the limit, and the second to no
    more than the limit in the window after the refusal)."""
    pacer = ctx.pacer(ctx.creator)
    ctx.wait(pacer.quiet_at(ctx.now()) - ctx.now(), "a quiet spell before the rate-limit burst")
    refused = _burst(ctx, "rate-a")
    if refused is None:
        return  # the model's span bound reported a burst that was never refused
    started = ctx.now()
    while ctx.now() - started < 2 * RATE_WINDOW_SECONDS:
        ctx.wait(_PROBE_STEP_SECONDS, "the limiter to admit a create again", pacing=True)
        exchange = _create(ctx, "rate-probe")
        if is_success(exchange):
            break
        if not is_rate_limited(exchange):
            return
    else:
        raise NotApplicable(
            "the limiter refused every create for two windows while the key sent one every "
            f"{_PROBE_STEP_SECONDS:g} s (a limiter that counts refusals may do so)"
        )
    _burst(ctx, "rate-b")


def _create(ctx: Context, room: str) -> Exchange:
    exchange = ctx.target.request(
        "POST", "/v1/sessions", role=ctx.creator, json_body=ctx.session_body(room),
        operation="createSession",
    )  # fmt: skip
    ctx.pacer(ctx.creator).record(ctx.now())
    ctx.remember(exchange, ctx.creator)
    _end_if_created(ctx, exchange)
    if exchange.status == 429 and refusal_code(exchange) == "concurrent_sessions":
        ctx.settle(ctx.creator)
    return exchange


def _burst(ctx: Context, room: str) -> Exchange | None:
    """Creates in quick succession until one is refused rate_limit (the refusal), at most
    three times the limit; a refusal for another reason stops the script."""
    for _ in range(3 * RATE_LIMIT):
        exchange = _create(ctx, room)
        if is_rate_limited(exchange):
            ctx.proves(exchange)
            return exchange
        if not is_success(exchange) and refusal_code(exchange) != "concurrent_sessions":
            ctx.created(exchange)  # says why the script stops
    return None


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
