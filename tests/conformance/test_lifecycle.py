"""HAR-3: the seed's session table as the lifecycle check reads it, and the check on a target."""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.conformance.checks import CheckFailed
from harness.conformance.lifecycle import (
    END_RULES,
    TERMINAL,
    check_history,
    judge_end,
    timestamps_in_order,
)
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Exchange
from tests.conformance.edits import Call, Edits, Reply, objects
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-3")

TS = "2026-01-01T00:00:00.000Z"
STATES = ["created", "queued", "starting", "running", "ending", "ended", "failed", "canceled"]


def _exchange() -> Exchange:
    return Exchange("POST", "http://t/v1/sessions/s/end", "/v1/sessions/s/end", {}, b"", 200,
                    httpx.Headers(), b"{}")  # fmt: skip


def _session(status: str, first_frame: bool) -> dict[str, Any]:
    return {"status": status, "first_frame_at": "2026-01-01T00:00:00.000Z" if first_frame else None}


def test_the_table_is_the_seeds() -> None:
    assert {"ended", "failed", "canceled"} == TERMINAL
    rules = {rule.had_first_frame: rule for rule in END_RULES}
    assert rules[True].outcomes == {"ending", "ended"} and rules[True].requirement == "SES-ST-3"
    assert rules[False].outcomes == {"canceled"} and rules[False].requirement == "SES-ST-4"


@pytest.mark.req("SES-ST-3", "SES-ST-4", "SES-ST-5")
@given(before=st.sampled_from([None, *STATES]), after=st.sampled_from(STATES), ran=st.booleans())
@settings(max_examples=150)
def test_end_is_judged_by_the_table(before: str | None, after: str, ran: bool) -> None:
    if before in TERMINAL:
        allowed = after == before
    elif after == "failed":
        allowed = True
    else:
        allowed = after in next(r for r in END_RULES if r.had_first_frame == ran).outcomes
    if allowed:
        judge_end(before, _session(after, ran), _exchange())
    else:
        with pytest.raises(CheckFailed):
            judge_end(before, _session(after, ran), _exchange())


@pytest.mark.req("SES-ST-8")
@given(history=st.lists(st.sampled_from(STATES), min_size=1, max_size=8))
@settings(max_examples=150)
def test_terminal_states_are_final_in_any_history(history: list[str]) -> None:
    pairs = list(itertools.pairwise(history))
    bad = any(a in TERMINAL and b != a for a, b in pairs) or any(
        a == "ending" and b not in {"ending", "ended", "failed"} for a, b in pairs
    )
    if bad:
        with pytest.raises(CheckFailed):
            check_history(history)
    else:
        check_history(history)


@pytest.mark.req("SES-ST-3", "SES-ST-4", "RES-SESS-4")
@pytest.mark.parametrize("status", ["queued", "canceled", "ending"])
def test_a_session_without_first_frame_at_is_judged_not_started(status: str) -> None:
    """A deployment may leave ``first_frame_at`` out until it is set (GAP-NULL-1): absent reads
    as null, never as a crash or as a session that ran."""
    session = {"status": status}
    if status == "canceled":
        judge_end(None, session, _exchange())
    else:
        with pytest.raises(CheckFailed, match="not yet started"):
            judge_end(None, session, _exchange())


def _running_before_first_frame(call: Call, reply: Reply) -> None:
    """Sessions still booting are called running, without first_frame_at until it is set."""
    body = reply.json()
    sessions = [s for s in objects(body) if s.get("object") == "session"]
    for session in sessions:
        if session.get("status") == "starting":
            session["status"] = "running"
            session.pop("first_frame_at", None)
    if sessions:
        reply.set_json(body)


@pytest.mark.req("RES-SESS-4", "HAR-5")
def test_a_session_called_running_before_its_first_frame_is_waited_for() -> None:
    """The seed does not say ``running`` and ``first_frame_at`` come at the same instant, so the
    clocked lifecycle waits for the stamp instead of failing the first running answer."""
    edits = Edits(response=(_running_before_first_frame,))
    only = frozenset({"session_lifecycle_clock"})
    report = run(simulated(edits=edits).target, RunOptions(max_examples=0, seed=3, only=only))
    assert report.failed_names() == [], report.summary()
    assert report.result("session_lifecycle_clock").outcome == "passed"


@pytest.mark.req("RES-SESS-4", "CONV-2")
@pytest.mark.parametrize(
    ("created", "started", "first", "in_order"),
    [
        ("2026-01-01T00:01:00Z", "2026-01-01T00:01:00.000Z", "2026-01-01T00:01:03Z", True),
        ("2026-01-01T00:01:00.5Z", "2026-01-01T00:01:01+00:00", "2026-01-01T00:01:03.25Z", True),
        ("2026-01-01T00:01:02Z", "2026-01-01T00:01:01.000Z", "2026-01-01T00:01:03.000Z", False),
        ("2026-01-01T00:01:00Z", "2026-01-01T00:01:04.000Z", "2026-01-01T00:01:03.999Z", False),
    ],
)
def test_stamps_are_ordered_as_instants_not_strings(
    created: str, started: str, first: str, in_order: bool
) -> None:
    """The seed fixes ISO-8601 UTC, not one spelling: ``…:00Z`` and ``…:00.000Z`` are the same
    instant although they do not sort as strings."""
    session = {"created_at": created, "started_at": started, "first_frame_at": first}
    if in_order:
        timestamps_in_order(session)
    else:
        with pytest.raises(CheckFailed, match="out of order"):
            timestamps_in_order(session)


@pytest.mark.req("RES-SESS-4")
@pytest.mark.parametrize("missing", ["started_at", "first_frame_at"])
def test_a_running_session_must_show_both_stamps(missing: str) -> None:
    session = {"created_at": TS, "started_at": TS, "first_frame_at": TS}
    del session[missing]
    with pytest.raises(CheckFailed, match=f"{missing} absent"):
        timestamps_in_order(session)
