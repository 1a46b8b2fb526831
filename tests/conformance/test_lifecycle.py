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
    progress,
    timestamps_in_order,
)
from harness.conformance.report import Report
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


def _session(
    status: str, first_frame: bool, started: bool = False, no_capacity: bool = False
) -> dict[str, Any]:
    return {
        "status": status,
        "started_at": TS if started or first_frame else None,
        "first_frame_at": TS if first_frame else None,
        "error": {"code": "no_capacity"} if no_capacity else None,
    }


def test_the_table_is_the_seeds() -> None:
    assert {"ended", "failed", "canceled"} == TERMINAL
    rules = {rule.progress: rule for rule in END_RULES}
    assert rules["ran"].outcomes == {"ending", "ended"} and rules["ran"].requirement == "SES-ST-3"
    assert rules["not_started"].outcomes == {"canceled"}
    assert rules["not_started"].requirement == "SES-ST-4"
    # Placed, no first frame: where the two readings of "not yet started" meet, either row.
    assert rules["placed"].outcomes == rules["ran"].outcomes | rules["not_started"].outcomes


@pytest.mark.req("SES-ST-3", "SES-ST-4", "SES-ST-5")
@given(
    before=st.sampled_from([None, *STATES]),
    after=st.sampled_from(STATES),
    ran=st.booleans(),
    started=st.booleans(),
    no_capacity=st.booleans(),
)
@settings(max_examples=400)
def test_end_is_judged_by_the_table(
    before: str | None, after: str, ran: bool, started: bool, no_capacity: bool
) -> None:
    """Written out from the seed's rows, independently of ``progress``: a session that had its
    first frame or was seen running or ending drains; one seen with none of those nor a
    placement (``started_at``, ``starting``) is canceled; in between, either. ``failed`` only
    for a session the start-up timeout failed (never placed, its error naming no_capacity)."""
    placed = ran or started or before in ("running", "ending", "starting")
    if before in TERMINAL:
        allowed = after == before
    elif after == "failed":
        allowed = no_capacity and not placed
    elif ran or before in ("running", "ending"):
        allowed = after in ("ending", "ended")
    elif started or before == "starting":
        allowed = after in ("ending", "ended", "canceled")
    else:
        allowed = after == "canceled"
    session = _session(after, ran, started, no_capacity)
    if allowed:
        judge_end(before, session, _exchange())
    else:
        with pytest.raises(CheckFailed):
            judge_end(before, session, _exchange())


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
def test_a_session_without_its_stamps_is_judged_not_started(status: str) -> None:
    """A deployment may leave ``started_at`` and ``first_frame_at`` out until they are set
    (GAP-NULL-1): absent reads as null, never as a crash or as a session that ran."""
    session = {"status": status}
    assert progress(None, session) == progress("queued", session) == "not_started"
    if status == "canceled":
        judge_end(None, session, _exchange())
    else:
        with pytest.raises(CheckFailed, match="not yet started"):
            judge_end(None, session, _exchange())


@pytest.mark.req("SES-ST-3", "SES-ST-4", "HAR-5")
@pytest.mark.parametrize(
    ("before", "session", "reached"),
    [
        ("running", {"status": "ending"}, "ran"),  # called running a moment before its stamps
        ("queued", {"status": "ending", "first_frame_at": TS}, "ran"),  # ran since it was seen
        ("starting", {"status": "canceled"}, "placed"),
        ("queued", {"status": "ended", "started_at": TS}, "placed"),  # placed since it was seen
        ("queued", {"status": "canceled", "started_at": None}, "not_started"),
    ],
)
def test_progress_reads_the_status_seen_before_and_the_answers_stamps(
    before: str, session: dict[str, Any], reached: str
) -> None:
    assert progress(before, session) == reached
    judge_end(before, session, _exchange())  # each of these answers is legal


def _run_check(edits: Edits, check: str) -> Report:
    """Only ``check`` (no fuzzing) against the simulator behind ``edits``."""
    options = RunOptions(max_examples=0, seed=3, only=frozenset({check}))
    return run(simulated(edits=edits).target, options)


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
    report = _run_check(edits, "session_lifecycle_clock")
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
def test_a_session_that_ran_and_ended_must_show_both_stamps(missing: str) -> None:
    """While it runs a session may show first_frame_at later than running (the seed ties them
    to different events); once it has run and ended, both are set."""
    session = {"created_at": TS, "started_at": TS, "first_frame_at": TS}
    del session[missing]
    timestamps_in_order(session)
    with pytest.raises(CheckFailed, match=f"{missing} absent"):
        timestamps_in_order(session, ran=True)


def _placed_at_once_and_drained(call: Call, reply: Reply) -> None:
    """A deployment whose worker takes every job at once: a session it is asked about after its
    create is running (placed, its first frame not stamped yet), and ending one drains it
    (``ending``, then ``ended``) where the simulator cancels a queued one. Legal under the seed:
    ``running`` before ``first_frame_at`` is stamped, and ``end`` on a running session."""
    body = reply.json()
    sessions = [s for s in objects(body) if s.get("object") == "session"]
    drained: set[str] = call.state.setdefault("drained", set())
    ending = call.method == "POST" and call.path.endswith("/end")
    for session in sessions:
        if call.method == "POST" and not ending:
            continue  # a create answers queued (SES-ST-1)
        if session.get("status") == "queued":
            session.update(status="running", started_at=session["created_at"])
            session.pop("first_frame_at", None)
        elif session.get("status") == "canceled":
            session["started_at"] = session["created_at"]
            session.pop("first_frame_at", None)
            if ending and session["id"] not in drained:
                drained.add(session["id"])
                session["status"] = "ending"
            elif session["id"] in drained:
                session["status"] = "ended"
    if sessions:
        reply.set_json(body)


@pytest.mark.req("SES-ST-3", "SES-ST-4", "HAR-5")
def test_a_session_called_running_before_its_first_frame_may_be_drained_by_end() -> None:
    """The lifecycle check ends a session it saw ``running`` without ``first_frame_at``: the
    deployment drains it, as the seed's ``running`` row says, and the check passes (it judged
    that answer by the missing stamp alone, as a not yet started session's, before)."""
    edits = Edits(response=(_placed_at_once_and_drained,))
    report = _run_check(edits, "session_lifecycle")
    assert report.failed_names() == [], report.summary()
    assert report.result("session_lifecycle").outcome == "passed"


@pytest.mark.req("SES-ST-4", "HAR-6")
def test_a_queued_session_drained_by_end_is_still_reported() -> None:
    """The tolerance above is not a blanket one: a deployment that drains a session it still
    calls queued, with no stamp, is reported (the seed's "not yet started" row)."""

    def drain_queued(call: Call, reply: Reply) -> None:
        if call.method == "POST" and call.path.endswith("/end"):
            body = reply.json()
            if isinstance(body, dict) and body.get("status") == "canceled":
                body.update(status="ending", started_at=None, first_frame_at=None)
                reply.set_json(body)

    report = _run_check(Edits(response=(drain_queued,)), "session_lifecycle")
    assert report.failed_names() == ["session_lifecycle"], report.summary()
    assert "not yet started" in report.result("session_lifecycle").failures[0].message
