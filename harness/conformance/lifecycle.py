"""Stateful conformance of the session lifecycle (HAR-3) and the seed's timers.

Why only the seed's rows: the seed states the terminal states, what ``end`` does to a running
session (``ending`` then ``ended``), to one not yet started (``canceled``) and to a terminal one
(unchanged, 200). Everything between ``created`` and ``running`` is a gap (SES-ST-9), so a
deployment is never held to the simulator's choices there. The rows are data (``END_RULES``,
``TERMINAL``) that the check and its tests both read.

Because a deployment's clock keeps moving between two requests, the outcome of ``end`` is judged
by how far the session had got (``progress``): what its answer shows, and the status seen a moment
earlier, which can only have moved on since. A session that reached its first frame, or was
called ``running``, ran (``end`` gives ``ending`` or ``ended``). One with neither but placed on a
worker (``started_at``, or called ``starting``) is where the seed's two rows meet: "not yet
started" may be read as "before its first frame" (``canceled``) or as "before ``session.starting``"
(and then the seed does not say what ``end`` does to a booting session, so a drain is as legal),
so either outcome passes. Only a session with none of these had surely not started
(``canceled``).

``end`` answered ``failed`` passes only when the session had failed: seen ``failed`` before the
end, or failed by the start-up timeout (never placed, its error naming ``no_capacity``) a moment
before the end arrived. Nothing else in the seed fails a session, and an ``end`` never does.

The timers (max duration, idle timeout) need time to pass on the target: the simulator's clock
with ``--sim-admin-token``, or real waiting (the default) at the shortest values the seed allows
(1 s). A running session may show ``first_frame_at`` some time after it is called ``running``
(the seed ties the two to different events); once it has ended after running, both of its stamps
are set. Capacity faults (``no_capacity``, ``at_capacity``) can only be brought about through the
simulator's admin API.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.conformance.checks import (
    CheckFailed,
    Incomplete,
    NotApplicable,
    scenario_check,
)
from harness.conformance.context import (
    TERMINAL,
    Context,
    expect_status,
    is_success,
    refusal_code,
)
from harness.conformance.responses import utc_instant
from harness.conformance.scenarios import walk
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange
from harness.conformance.watch import mentions

__all__ = [
    "END_RULES",
    "TERMINAL",
    "EndRule",
    "check_history",
    "judge_end",
    "progress",
    "timestamps_in_order",
]


@dataclass(frozen=True, slots=True)
class EndRule:
    """A row of the seed's table for ``POST /v1/sessions/{id}/end``, by the session's
    ``progress`` when it was ended."""

    progress: str
    outcomes: frozenset[str]
    requirement: str
    described: str  # the session, as a failure message names it


#: ``end`` on a session that ran, that was placed but had no first frame yet (either reading of
#: "not yet started", see the module's docstring), or that had surely not started.
END_RULES: tuple[EndRule, ...] = (
    EndRule("ran", frozenset({"ending", "ended"}), "SES-ST-3", "a running"),
    EndRule("placed", frozenset({"canceled", "ending", "ended"}), "SES-ST-3, SES-ST-4", "a placed"),
    EndRule("not_started", frozenset({"canceled"}), "SES-ST-4", "a not yet started"),
)
#: Statuses that say the session ran, or that it was placed on a worker (seen before the end).
_RAN_STATUSES = frozenset({"running", "ending"})
_PLACED_STATUSES = frozenset({"starting"})

#: The seed's start-up timeout (SES-ST-2), and how long the harness lets a session take to
#: reach its first frame, to drain, or to be ended by a timer after its limit (no bound stated).
STARTUP_TIMEOUT_SECONDS = SEED.startup_timeout_seconds
_PLACEMENT_SECONDS = 60.0
_GRACE_SECONDS = 60.0
#: How long a session called running is given to show first_frame_at before it is ended: the
#: seed ties the two to different events, so the stamp may come any time while it runs, and a
#: session sent no audio runs at most its idle timeout (the seed's default) past that.
_STAMP_WITHIN_SECONDS = SEED.idle_default + _GRACE_SECONDS
_SETTLE_SECONDS = 3600.0


def judge_end(before: str | None, session: dict[str, Any], exchange: Exchange) -> None:
    """The session ``end`` answered is one the seed's table allows after ``before``."""
    status = session.get("status")
    if before in TERMINAL:
        if status != before:
            raise CheckFailed(f"end on a {before} session changed it to {status!r}", exchange)
        return
    if status == "failed":
        if progress(before, session) == "not_started" and mentions(
            session.get("error"), "no_capacity"
        ):
            return  # the start-up timeout failed the job a moment before the end arrived
        raise CheckFailed(
            f"end on a session seen {before!r} answered 'failed' with error "
            f"{session.get('error')!r}; end never fails a session, and only a start-up timeout "
            "(no_capacity) fails one that had not run (SES-ST-3, SES-ST-4)",
            exchange,
        )
    reached = progress(before, session)
    rule = next(r for r in END_RULES if r.progress == reached)
    if status not in rule.outcomes:
        raise CheckFailed(
            f"end on {rule.described} session answered {status!r}; the seed allows "
            f"{sorted(rule.outcomes)} ({rule.requirement})",
            exchange,
        )


def progress(before: str | None, session: dict[str, Any]) -> str:
    """How far a session had got when it was ended (``END_RULES``): from the status seen before
    the end (``before``, ``None`` when unknown) and the stamps its answer shows."""
    if _ran(session) or before in _RAN_STATUSES:
        return "ran"
    if session.get("started_at") is not None or before in _PLACED_STATUSES:
        return "placed"
    return "not_started"


def check_history(history: Sequence[str]) -> None:
    """Terminal states are final: once terminal, every later observation is the same state."""
    for earlier, later in itertools.pairwise(history):
        if earlier in TERMINAL and later != earlier:
            raise CheckFailed(f"a {earlier} session later showed {later!r} (SES-ST-8)")
        if earlier == "ending" and later not in {"ending", "ended", "failed"}:
            raise CheckFailed(f"an ending session later showed {later!r} (SES-ST-3)")


def _end(ctx: Context, session_id: str, before: str | None) -> dict[str, Any]:
    exchange = ctx.end(session_id)
    wanted = (200,) if before in TERMINAL else ()
    body = expect_status(exchange, *wanted, what="POST /v1/sessions/{id}/end")
    if not isinstance(body, dict) or body.get("id") != session_id:
        raise CheckFailed("end answered another resource than the session", exchange)
    judge_end(before, body, exchange)
    return body


@scenario_check(
    "session_lifecycle", "HAR-3", "SES-ST-1", "SES-ST-4", "SES-ST-5", "SES-ST-8", "EP-SESS-9",
    creates=1,
)  # fmt: skip
def session_lifecycle(ctx: Context) -> None:
    """Create, get, list, end, end again: every answer is a row of the seed's state table."""
    created, session = ctx.new_session("lifecycle")
    sid = session["id"]
    history = [str(session.get("status"))]
    if session.get("status") != "queued":
        raise CheckFailed(f"a created session is {session.get('status')!r}, not queued", created)
    history.append(str(ctx.get_session(sid)[1].get("status")))
    if sid not in walk(ctx.target, "/v1/sessions"):
        raise CheckFailed(f"the created session {sid} is not in GET /v1/sessions")
    ended = _end(ctx, sid, history[-1])
    history.append(str(ended.get("status")))
    again = _end(ctx, sid, history[-1] if history[-1] in TERMINAL else None)
    history.append(str(again.get("status")))
    if ended.get("status") == "ending" and again.get("status") not in {"ending", "ended"}:
        raise CheckFailed(f"ending then end again answered {again.get('status')!r}")
    final = ctx.proves(ctx.get_session(sid)[0])
    history.append(str(final.json().get("status")))
    check_history(history)


def _ran(session: dict[str, Any]) -> bool:
    """Whether the session shows its first frame (``first_frame_at`` may be absent until then)."""
    return session.get("first_frame_at") is not None


def _running(ctx: Context, session_id: str, history: list[str]) -> dict[str, Any]:
    """Wait for the session to run; a session that never runs leaves the check incomplete."""

    def fetch() -> dict[str, Any]:
        session = ctx.get_session(session_id)[1]
        history.append(str(session.get("status")))
        return session

    session = ctx.poll(
        fetch,
        lambda s: s.get("status") == "running" or s.get("status") in TERMINAL,
        within=_PLACEMENT_SECONDS,
        step=1.0,
        why="the session to run",
    )
    if session.get("status") != "running":
        raise Incomplete(
            f"the session did not run within {_PLACEMENT_SECONDS:g} s (it is "
            f"{session.get('status')!r}): give a room the worker can join",
            "--transport-json",
        )
    if not _ran(session):
        # Called running before its first frame is stamped: wait for the stamp (or for the
        # session to end by itself), so that the end is judged against a session that ran.
        session = ctx.poll(
            fetch,
            lambda s: _ran(s) or s.get("status") != "running",
            within=_STAMP_WITHIN_SECONDS,
            step=1.0,
            why="a running session to show its first frame",
        )
    return session


_STAMPS = ("started_at", "first_frame_at")


def timestamps_in_order(
    session: dict[str, Any], exchange: Exchange | None = None, *, ran: bool = False
) -> None:
    """The stamps a session shows are no earlier than created_at and in the order of their
    events; one that has ended after running shows both (RES-SESS-4)."""
    created, started, first = (
        session.get(name) for name in ("created_at", "started_at", "first_frame_at")
    )
    if ran and (not isinstance(started, str) or not isinstance(first, str)):
        shown = {n: repr(session[n]) if n in session else "absent" for n in _STAMPS}
        raise CheckFailed(
            f"a session that ran and ended shows started_at {shown['started_at']} and "
            f"first_frame_at {shown['first_frame_at']}; once it has run, both are set "
            "(RES-SESS-4)",
            exchange,
        )
    # Compared as instants (two spellings of one format need not sort as strings); a value that
    # is no timestamp at all is timestamps_utc's to report.
    instants = [utc_instant(value) for value in (created, started, first)]
    known = [instant for instant in instants if instant is not None]
    if known != sorted(known):
        raise CheckFailed(
            f"created_at {created}, started_at {started}, first_frame_at {first} are out of order",
            exchange,
        )


@scenario_check(
    "session_lifecycle_clock",
    "HAR-3", "SES-ST-3", "SES-ST-5", "SES-ST-8", "RES-SESS-4",
    creates=1, key="any", budget=_PLACEMENT_SECONDS + _STAMP_WITHIN_SECONDS + _GRACE_SECONDS,
)  # fmt: skip
def session_lifecycle_clock(ctx: Context) -> None:
    """A session gets first_frame_at only from its first frame; ended while running it drains
    through ending to ended, stays ended with both stamps in order, and end again answers it
    unchanged."""
    created, session = ctx.new_session("lifecycle-clock")
    sid = session["id"]
    if session.get("status") == "queued" and _ran(session):
        raise CheckFailed("a queued session already has first_frame_at", created)
    history = [str(session.get("status"))]
    running = _running(ctx, sid, history)
    timestamps_in_order(running)
    if running.get("status") in TERMINAL:
        raise CheckFailed(
            f"a session ran and ended {running.get('status')!r} by itself without ever showing "
            "first_frame_at (RES-SESS-4)"
        )
    # Without a first frame yet, the end is judged as that of a placed session (either row).
    ended = _end(ctx, sid, "running" if _ran(running) else "starting")
    if ended.get("status") == "canceled":
        raise Incomplete("the session was canceled before its first frame, so it did not drain")
    history.append(str(ended.get("status")))
    settled = ctx.poll(
        lambda: ctx.get_session(sid)[1],
        lambda s: s.get("status") in TERMINAL,
        within=_GRACE_SECONDS,
        step=1.0,
        why="the ended session to drain",
    )
    history.append(str(settled.get("status")))
    if settled.get("status") not in TERMINAL:
        raise CheckFailed(f"an ended session is still {settled.get('status')!r}")
    if settled.get("status") != "ended":
        raise CheckFailed(f"an ending session became {settled.get('status')!r}, not ended")
    ctx.wait(_SETTLE_SECONDS if ctx.admin else 1.0, "time to pass on an ended session")
    exchange, later = ctx.get_session(sid)
    history.append(str(later.get("status")))
    timestamps_in_order(later, exchange, ran=True)
    again = _end(ctx, sid, "ended")
    history.append(str(again.get("status")))
    check_history(history)
    ctx.proves(exchange)


def _judge_reason(ctx: Context, session_id: str, code: str) -> None:
    """Where the reason can be seen (the simulator's admin API), session.ended names it."""
    exchange = ctx.target.request("GET", f"/_sim/sessions/{session_id}/events", role="admin")
    events = expect_status(exchange, 200, what="GET /_sim/sessions/{id}/events").get("data")
    ended = [e for e in events or [] if isinstance(e, dict) and e.get("type") == "session.ended"]
    reasons = [e.get("data", {}).get("reason") for e in ended]
    if reasons != [code]:
        raise CheckFailed(f"session {session_id}'s session.ended gave reasons {reasons}, not "
                          f"[{code!r}]")  # fmt: skip


def _ends_on_its_own(
    ctx: Context, room: str, idle: int, limit: int, reason: str, code: str
) -> None:
    """A session with the given timers runs and then ends by itself, as ``ended``. With timers
    of a second it may have run and ended between two looks, which shows the same."""
    _, session = ctx.new_session(room, idle_timeout_seconds=idle, max_duration_seconds=limit)
    sid = session["id"]
    history = [str(session.get("status"))]

    def fetch() -> dict[str, Any]:
        current = ctx.get_session(sid)[1]
        history.append(str(current.get("status")))
        return current

    bound = _PLACEMENT_SECONDS + min(idle, limit) + _GRACE_SECONDS
    final = ctx.poll(
        fetch,
        lambda s: s.get("status") in TERMINAL,
        within=bound,
        step=1.0,
        why=f"the session to run and the {reason} to end it",
    )
    # Only a session that ran can end ``ended`` (the seed's rows), however briefly it ran.
    ran = _ran(final) or "running" in history or final.get("status") == "ended"
    if final.get("status") not in TERMINAL:
        if not ran:
            raise Incomplete(
                f"the session did not run within {bound:g} s (it is {final.get('status')!r}): "
                "give a room the worker can join",
                "--transport-json",
            )
        raise CheckFailed(
            f"a running session with {reason} {min(idle, limit)} s was still "
            f"{final.get('status')!r} {bound:g} s after its creation"
        )
    if not ran:
        raise Incomplete(f"the session ended {final.get('status')!r} without running")
    if final.get("status") != "ended":
        raise CheckFailed(f"the {reason} left the session {final.get('status')!r}, not ended")
    check_history(history)
    timestamps_in_order(final)  # a session this short may end before its first frame is stamped
    if ctx.admin:
        _judge_reason(ctx, sid, code)


_TIMER_BUDGET = _PLACEMENT_SECONDS + _GRACE_SECONDS + 30


@scenario_check("max_duration_ends", "SES-ST-6", creates=1, key="any", budget=_TIMER_BUDGET)
def max_duration_ends(ctx: Context) -> None:
    """A running session with max_duration_seconds 1 (and idle 600) is ended by the worker, and
    where the event can be seen, session.ended gives the reason max_duration."""
    _ends_on_its_own(
        ctx, "max-duration", SEED.idle_max, SEED.max_duration_min, "max duration", "max_duration"
    )


@scenario_check("idle_timeout_ends", "SES-ST-7", creates=1, key="any", budget=_TIMER_BUDGET)
def idle_timeout_ends(ctx: Context) -> None:
    """A running livekit session that receives no audio for idle_timeout_seconds 1 is ended,
    and where the event can be seen, session.ended gives the reason idle_timeout."""
    _ends_on_its_own(
        ctx, "idle", SEED.idle_min, SEED.max_duration_ceiling, "idle timeout", "idle_timeout"
    )


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
