"""Stateful conformance of the session lifecycle (HAR-3): create, get, list, end, end again.

Why only the seed's rows: the seed states the terminal states, what ``end`` does to a running
session (``ending`` then ``ended``), to one not yet started (``canceled``) and to a terminal one
(unchanged, 200). Everything between ``created`` and ``running`` is a gap (SES-ST-9), so a
deployment is never held to the simulator's choices there. The rows are data (``END_RULES``,
``TERMINAL``) that the check and its tests both read.

Because a deployment's clock keeps moving between two requests, the outcome of ``end`` is judged
against what the session itself says rather than against the status seen a moment earlier: a
session that reached its first frame was running (so ``end`` gives ``ending`` or ``ended``), one
that never did had not started (so ``end`` gives ``canceled``). With ``--sim-admin-token`` the
simulator's clock is advanced to watch ``ending`` become ``ended``; without it only what is
observable is checked.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.conformance.checks import CheckFailed, scenario_check
from harness.conformance.probes import (
    TERMINAL,
    create_session,
    end_quietly,
    expect_status,
    ready_avatar,
    session_body,
)
from harness.conformance.scenarios import walk
from harness.conformance.target import Exchange, Target

__all__ = ["END_RULES", "TERMINAL", "EndRule", "check_history", "judge_end"]


@dataclass(frozen=True, slots=True)
class EndRule:
    """A row of the seed's table for ``POST /v1/sessions/{id}/end``."""

    had_first_frame: bool
    outcomes: frozenset[str]
    requirement: str


#: ``end`` on a session that was running (it had its first frame) or had not started.
END_RULES: tuple[EndRule, ...] = (
    EndRule(True, frozenset({"ending", "ended"}), "SES-ST-3"),
    EndRule(False, frozenset({"canceled"}), "SES-ST-4"),
)

_SECONDS_TO_SETTLE = 3600.0


def judge_end(before: str | None, session: dict[str, Any], exchange: Exchange) -> None:
    """The session ``end`` answered is one the seed's table allows after ``before``."""
    status = session.get("status")
    if before in TERMINAL:
        if status != before:
            raise CheckFailed(f"end on a {before} session changed it to {status!r}", exchange)
        return
    if status == "failed":
        return  # the job failed on its own before the end arrived (e.g. no_capacity)
    running = session.get("first_frame_at") is not None
    rule = next(r for r in END_RULES if r.had_first_frame == running)
    if status not in rule.outcomes:
        state = "a running" if running else "a not yet started"
        raise CheckFailed(
            f"end on {state} session answered {status!r}; the seed allows "
            f"{sorted(rule.outcomes)} ({rule.requirement})",
            exchange,
        )


def check_history(history: Sequence[str]) -> None:
    """Terminal states are final: once terminal, every later observation is the same state."""
    for earlier, later in itertools.pairwise(history):
        if earlier in TERMINAL and later != earlier:
            raise CheckFailed(f"a {earlier} session later showed {later!r} (SES-ST-8)")
        if earlier == "ending" and later not in {"ending", "ended", "failed"}:
            raise CheckFailed(f"an ending session later showed {later!r} (SES-ST-3)")


def _get(target: Target, session_id: str) -> tuple[Exchange, dict[str, Any]]:
    exchange = target.request("GET", f"/v1/sessions/{session_id}", operation="retrieveSession")
    body = expect_status(exchange, 200, what="GET /v1/sessions/{id}")
    if not isinstance(body, dict) or body.get("id") != session_id:
        raise CheckFailed(f"GET of {session_id} answered another resource", exchange)
    return exchange, body


def _end(target: Target, session_id: str, before: str | None) -> dict[str, Any]:
    exchange = target.request("POST", f"/v1/sessions/{session_id}/end", operation="endSession")
    wanted = (200,) if before in TERMINAL else ()
    body = expect_status(exchange, *wanted, what="POST /v1/sessions/{id}/end")
    if not isinstance(body, dict) or body.get("id") != session_id:
        raise CheckFailed("end answered another resource than the session", exchange)
    judge_end(before, body, exchange)
    return body


@scenario_check(
    "session_lifecycle", "HAR-3", "SES-ST-1", "SES-ST-4", "SES-ST-5", "SES-ST-8", "EP-SESS-9"
)
def session_lifecycle(target: Target) -> None:
    """Create, get, list, end, end again: every answer is a row of the seed's state table."""
    avatar = ready_avatar(target)
    created, session = create_session(target, session_body(avatar, "lifecycle"))
    sid = session["id"]
    history = [str(session.get("status"))]
    try:
        if session.get("status") != "queued":
            raise CheckFailed(
                f"a created session is {session.get('status')!r}, not queued", created
            )
        _, fetched = _get(target, sid)
        history.append(str(fetched.get("status")))
        if sid not in walk(target, "/v1/sessions"):
            raise CheckFailed(f"the created session {sid} is not in GET /v1/sessions")
        ended = _end(target, sid, history[-1])
        history.append(str(ended.get("status")))
        again = _end(target, sid, history[-1] if history[-1] in TERMINAL else None)
        history.append(str(again.get("status")))
        if ended.get("status") == "ending" and again.get("status") not in {"ending", "ended"}:
            raise CheckFailed(f"ending then end again answered {again.get('status')!r}")
        _, final = _get(target, sid)
        history.append(str(final.get("status")))
        check_history(history)
    finally:
        if history[-1] not in TERMINAL:
            end_quietly(target, sid)


def _advance(target: Target, seconds: float) -> None:
    exchange = target.request(
        "POST", "/_sim/clock/advance", role="admin", json_body={"seconds": seconds}
    )
    expect_status(exchange, what="POST /_sim/clock/advance")


@scenario_check(
    "session_lifecycle_clock", "HAR-3", "SES-ST-3", "SES-ST-5", "SES-ST-8", needs=("admin",)
)
def session_lifecycle_clock(target: Target) -> None:
    """With the simulator's clock: a session that runs and is ended becomes ended, and stays."""
    avatar = ready_avatar(target)
    _, session = create_session(target, session_body(avatar, "lifecycle-clock"))
    sid = session["id"]
    history = [str(session.get("status"))]
    try:
        for _ in range(30):
            _advance(target, 1.0)
            history.append(str(_get(target, sid)[1].get("status")))
            if history[-1] == "running" or history[-1] in TERMINAL:
                break
        ended = _end(target, sid, history[-1])
        history.append(str(ended.get("status")))
        _advance(target, _SECONDS_TO_SETTLE)
        exchange, settled = _get(target, sid)
        history.append(str(settled.get("status")))
        if settled.get("status") not in TERMINAL:
            raise CheckFailed(
                f"an ended session is still {settled.get('status')!r} an hour later", exchange
            )
        if ended.get("status") in {"ending", "ended"} and settled.get("status") != "ended":
            raise CheckFailed(f"an ending session became {settled.get('status')!r}", exchange)
        again = _end(target, sid, str(settled.get("status")))
        history.append(str(again.get("status")))
        check_history(history)
    finally:
        if history[-1] not in TERMINAL:
            end_quietly(target, sid)
