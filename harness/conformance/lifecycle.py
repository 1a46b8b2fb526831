"""Scripts that drive the session lifecycle (HAR-3) and the seed's timers; the model judges
every answer (``session_transitions``, ``session_timers``, ``terminal_states_final``).

The seed states the terminal states, what ``end`` does to a running session (``ending`` then
``ended``), to one not yet started (``canceled``) and to a terminal one (unchanged, 200), and
the timers: the start-up timeout, max duration and the idle timeout. Everything between
``created`` and ``running`` is a gap (SES-ST-9), never judged.

The timers need time to pass on the target: the simulator's clock with ``--sim-admin-token``, or
real waiting (the default). They are tried at 20 s, long enough that a timer firing at half or
twice its value is told from one firing on time with ``session_timers``' slack; the two timer
sessions run side by side on two keys when the other organization's key is given. Capacity
faults (``no_capacity``, ``at_capacity``) can only be brought about through the simulator's
admin API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.conformance.answers import expect_status, is_success, refusal_code
from harness.conformance.checks import (
    LATE,
    CheckFailed,
    Incomplete,
    NotApplicable,
    scenario_check,
)
from harness.conformance.context import Context
from harness.conformance.listing import walk
from harness.conformance.model.session_book import DRAIN_BOUND, TIMER_SLACK
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange
from harness.conformance.watch import TERMINAL, mentions

__all__: list[str] = []

STARTUP_TIMEOUT_SECONDS = SEED.startup_timeout_seconds
#: Target seconds a session is given to be placed and reach its first frame (no bound is stated
#: beyond the start-up timeout, after which it must have failed).
_PLACEMENT_SECONDS = 60.0
#: The timers tried (target seconds).
TIMER_SECONDS = 20


@scenario_check("session_lifecycle", creates=1)
def session_lifecycle(ctx: Context) -> None:
    """Create, get, list, end, end again, get: the model judges every answer against the
    seed's rows."""
    _, session = ctx.new_session("lifecycle")
    sid = str(session["id"])
    ctx.get_session(sid)
    walk(ctx.target, "/v1/sessions")
    ctx.end(sid)
    ctx.end(sid)
    ctx.proves(ctx.get_session(sid)[0])


def _until(ctx: Context, sid: str, done: Any, within: float, why: str) -> dict[str, Any]:
    return ctx.poll(lambda: ctx.get_session(sid)[1], done, within=within, step=1.0, why=why)


@scenario_check(
    "session_lifecycle_clock", creates=1, key="any",
    budget=_PLACEMENT_SECONDS + DRAIN_BOUND + 30,
)  # fmt: skip
def session_lifecycle_clock(ctx: Context) -> None:
    """A session watched until it runs, ended while running, watched until it drains to ended,
    read again after time has passed and ended again (the model judges every answer)."""
    _, session = ctx.new_session("lifecycle-clock")
    sid = str(session["id"])
    running = _until(
        ctx, sid, lambda s: s.get("status") == "running" or s.get("status") in TERMINAL,
        _PLACEMENT_SECONDS, "the session to run",
    )  # fmt: skip
    if running.get("status") != "running":
        _never_ran(ctx, running)
    ended = ctx.end(sid)
    ctx.proves(ended)
    _until(
        ctx, sid, lambda s: s.get("status") in TERMINAL, DRAIN_BOUND + TIMER_SLACK,
        "the ended session to drain",
    )  # fmt: skip
    ctx.wait(3600.0 if ctx.admin else 1.0, "time to pass on an ended session")
    ctx.get_session(sid)
    ctx.end(sid)


def _never_ran(ctx: Context, session: dict[str, Any]) -> None:
    """Why a session that should have run did not: a status the model judged (queued past the
    start-up timeout), a worker the target lost, or a room it cannot join."""
    status = session.get("status")
    if status in ("created", "queued"):
        raise NotApplicable(
            "stopped: the session never left the queue (reported under session_timers)"
        )
    if status in TERMINAL:
        raise Incomplete(f"the session ended {status!r} before it ran, with {session.get('error')}")
    raise Incomplete(
        f"the session did not run within {_PLACEMENT_SECONDS:g} s (it is {status!r}): give a "
        "room the worker can join",
        "--transport-json",
    )


@scenario_check(
    "session_timers_probe", creates=2, key="any",
    budget=_PLACEMENT_SECONDS + TIMER_SECONDS + DRAIN_BOUND + 30,
)  # fmt: skip
def session_timers_probe(ctx: Context) -> None:
    """A session with max_duration_seconds 20 (idle 600) and one with idle_timeout_seconds 20
    (max 3600), side by side on two keys when the other organization's is given, watched until
    they end (the model holds each timer to its value, neither late nor early); where the
    simulator's admin API shows the events, session.ended names the reason."""
    other = next((r for r in ("api", "other_org") if r != ctx.creator and r in ctx.roles()), None)
    if other is not None and (
        other in ctx.quiet_keys or ctx.pacer(other).ready_at(ctx.now()) > ctx.now()
    ):
        other = None  # its key is busy, or kept quiet for the rate limit's burst
    plans = [
        ("max-duration", ctx.creator, SEED.idle_max, TIMER_SECONDS, "max_duration"),
        ("idle", other or ctx.creator, TIMER_SECONDS, SEED.max_duration_ceiling, "idle_timeout"),
    ]  # fmt: skip
    if ctx.inputs.transport is not None:
        plans = plans[:1]  # a real room may carry audio: the idle timeout cannot be provoked
    if plans[-1][1] == plans[0][1] and len(plans) > 1:
        for plan in plans:
            _watch_timers(ctx, [plan])
    else:
        _watch_timers(ctx, plans)


def _watch_timers(ctx: Context, plans: list[tuple[str, str, int, int, str]]) -> None:
    started: list[tuple[str, str, str]] = []
    for room, role, idle, limit, reason in plans:
        body = ctx.session_body(room, idle_timeout_seconds=idle, max_duration_seconds=limit)
        exchange = ctx.create_session(body, role=role)
        ctx.creator, creator = role, ctx.creator
        try:
            session = ctx.created(exchange)
        finally:
            ctx.creator = creator
        started.append((str(session["id"]), role, reason))
    bound = _PLACEMENT_SECONDS + TIMER_SECONDS + TIMER_SLACK + DRAIN_BOUND
    finals = {}
    for sid, _, _ in started:
        finals[sid] = _until(
            ctx, sid, lambda s: s.get("status") in TERMINAL, bound, "a timer to end the session"
        )
    for sid, _, reason in started:
        final = finals[sid]
        if final.get("status") in ("created", "queued"):
            _never_ran(ctx, final)
        if final.get("status") == "ended" and ctx.admin:
            _judge_reason(ctx, sid, reason)
        ctx.proves(ctx.get_session(sid)[0])


@scenario_check("capacity_probe", order=LATE, creates=2, key="any", budget=_PLACEMENT_SECONDS + 60)
def capacity_probe(ctx: Context) -> None:
    """Two sessions created at once on two keys, the second watched until it is placed or
    fails: on a deployment whose pool one session fills, the second waits the start-up timeout
    and must fail with no_capacity (the model judges it; on a larger pool nothing is learned,
    and the model says the start-up rule was not reached)."""
    other = next((r for r in ("api", "other_org") if r != ctx.creator and r in ctx.roles()), None)
    if other is None or other in ctx.quiet_keys:
        raise NotApplicable("needs a second key free to hold a session at the same time")
    held: list[str] = []
    try:
        for role in (ctx.creator, other):
            body = ctx.session_body(
                "capacity", idle_timeout_seconds=SEED.idle_max, max_duration_seconds=120
            )
            exchange = ctx.create_session(body, role=role)
            if not is_success(exchange):
                return
            held.append(str(exchange.json()["id"]))
        _until(
            ctx, held[1],
            lambda s: s.get("started_at") is not None or s.get("status") in TERMINAL,
            STARTUP_TIMEOUT_SECONDS + 10, "the second session to be placed or to fail",
        )  # fmt: skip
    finally:
        for session_id in held:
            ctx.end(session_id)


def _judge_reason(ctx: Context, session_id: str, code: str) -> None:
    """Where the reason can be seen (the simulator's admin API), session.ended names it."""
    exchange = ctx.target.request("GET", f"/_sim/sessions/{session_id}/events", role="admin")
    events = expect_status(exchange, 200, what="GET /_sim/sessions/{id}/events").get("data")
    ended = [e for e in events or [] if isinstance(e, dict) and e.get("type") == "session.ended"]
    reasons = [e.get("data", {}).get("reason") for e in ended]
    if reasons != [code]:
        raise CheckFailed(f"session {session_id}'s session.ended gave reasons {reasons}, not "
                          f"[{code!r}]")  # fmt: skip


# -- capacity, through the simulator's admin API ------------------------------------------------


@contextmanager
def _no_capacity(ctx: Context) -> Iterator[None]:
    """Every worker removed for the block, the pool's capacity put back afterwards."""
    ctx.settle()
    pool = ctx.target.request("GET", "/_sim/faults/capacity", role="admin")
    capacity = expect_status(pool, what="GET /_sim/faults/capacity").get("capacity")
    _set_capacity(ctx, 0)
    try:
        yield
    finally:
        _set_capacity(ctx, int(capacity))


def _set_capacity(ctx: Context, workers: int) -> None:
    exchange = ctx.target.request(
        "POST", "/_sim/faults/capacity", role="admin", json_body={"workers": workers}
    )
    expect_status(exchange, what="POST /_sim/faults/capacity")


@scenario_check("startup_timeout_fails", "SES-ST-2", needs=("admin",), creates=1)
def startup_timeout_fails(ctx: Context) -> None:
    """A job no worker can take is still waiting after 14 s and failed with code no_capacity
    after 16 s (the seed's start-up timeout is 15 s)."""
    with _no_capacity(ctx):
        _, session = ctx.new_session("no-capacity")
        sid = session["id"]
        before, after = STARTUP_TIMEOUT_SECONDS - 1, STARTUP_TIMEOUT_SECONDS + 1
        ctx.wait(before, "just under the start-up timeout")
        exchange, early = ctx.get_session(sid)
        if early.get("status") in TERMINAL:
            raise CheckFailed(
                f"a job waiting for a worker is {early.get('status')!r} after {before:g} s",
                exchange,
            )
        ctx.wait(after - before, "just past the start-up timeout")
        exchange, late = ctx.get_session(sid)
        if late.get("status") != "failed":
            raise CheckFailed(
                f"a job no worker took is {late.get('status')!r} after {after:g} s, not failed",
                exchange,
            )
        if not mentions(late.get("error"), "no_capacity"):
            raise CheckFailed(
                f"the start-up timeout's error {late.get('error')!r} has no code no_capacity",
                exchange,
            )


_ADMISSION_TRIES = 20


@scenario_check("at_capacity_refused", "EP-SESS-6", needs=("admin",))
def at_capacity_refused(ctx: Context) -> None:
    """With no worker and the wait queue full, a create answers 503 code at_capacity with
    Retry-After (sessions of a fresh organization's keys fill the queue)."""
    target = ctx.target
    made = target.request(
        "POST", "/_sim/organizations", role="admin",
        json_body={"name": "conformance capacity", "plan": "enterprise",
                   "concurrency_override": _ADMISSION_TRIES},
    )  # fmt: skip
    org = expect_status(made, what="POST /_sim/organizations")
    opened: list[tuple[str, str]] = []
    with _no_capacity(ctx):
        try:
            for _ in range(_ADMISSION_TRIES):
                made = target.request(
                    "POST", "/_sim/keys", role="admin", json_body={"org_id": org["id"]}
                )
                key = str(expect_status(made, what="POST /_sim/keys")["key"])
                auth = {"Authorization": f"Bearer {key}"}
                exchange = target.request(
                    "POST", "/v1/sessions", role=None, headers=auth,
                    json_body=ctx.session_body("capacity"), operation="createSession",
                )  # fmt: skip
                if is_success(exchange):
                    opened.append((key, str(exchange.json()["id"])))
                    continue
                _judge_at_capacity(exchange)
                return
            raise NotApplicable(
                f"{_ADMISSION_TRIES} waiting sessions did not fill the admission queue"
            )
        finally:
            for key, session_id in opened:
                target.request(
                    "POST", f"/v1/sessions/{session_id}/end", role=None,
                    headers={"Authorization": f"Bearer {key}"}, observe=False,
                )  # fmt: skip


def _judge_at_capacity(exchange: Exchange) -> None:
    if exchange.status != 503 or refusal_code(exchange) != "at_capacity":
        raise CheckFailed(
            f"a create with no free worker answered {exchange.status} "
            f"{refusal_code(exchange)!r}, not 503 at_capacity",
            exchange,
        )
    if exchange.headers.get("retry-after") is None:
        raise CheckFailed("the 503 at_capacity carries no Retry-After", exchange)
