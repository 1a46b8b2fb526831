"""HAR-3: the seed's session table as the model reads it, and the lifecycle scripts on a target.

The model judges ``end`` by how far the session had got when the end was sent: what the run saw
of it before (its statuses and stamps), never the answer's own stamps alone.
"""

from __future__ import annotations

import itertools
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.conformance.model.session_book import END_RULES, SessionBook
from harness.conformance.model.session_facts import TERMINAL
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
    status: str, first_frame: bool = False, started: bool = False, no_capacity: bool = False
) -> dict[str, Any]:
    return {
        "id": "sess_1",
        "status": status,
        "created_at": TS,
        "started_at": TS if started or first_frame else None,
        "first_frame_at": TS if first_frame else None,
        "error": {"code": "no_capacity"} if no_capacity else None,
    }


def _book(*seen: dict[str, Any], ended: bool = False) -> SessionBook:
    """A book that made ``sess_1`` (its create answered queued) and saw it as ``seen``
    (``ended``: after its owner had sent an end)."""
    book = SessionBook()
    book.created(_session("queued"), org="own", role="api", sent=0.0, at=0.0)
    if ended:
        book.end_sent("sess_1", 0.0)
    list(book.seen(_session("queued"), 0.0, _exchange(), org="own", order=0))
    for order, resource in enumerate(seen, start=1):
        list(book.seen(resource, float(order), _exchange(), org="own", order=order))
    return book


def _end_failures(book: SessionBook, answer: dict[str, Any]) -> list[str]:
    return [v.failure for v in book.judge_end("sess_1", answer, _exchange()) if v.failure]


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
    before=st.sampled_from(STATES),
    after=st.sampled_from(STATES),
    ran=st.booleans(),
    started=st.booleans(),
    no_capacity=st.booleans(),
)
@settings(max_examples=400)
def test_end_is_judged_by_the_table(
    before: str, after: str, ran: bool, started: bool, no_capacity: bool
) -> None:
    """Written out from the seed's rows, independently of ``progress``: a session seen running
    or ending, or with a first frame, drains; one seen with none of those nor a placement
    (``started_at``, ``starting``) is canceled; in between, either. ``failed`` only for a session
    the start-up timeout failed (never placed, its error naming no_capacity)."""
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
    book = _book(_session(before, ran, started), ended=before == "canceled")
    failures = _end_failures(book, _session(after, ran, started, no_capacity))
    assert (failures == []) is allowed, failures


@pytest.mark.req("SES-ST-3", "SES-ST-4")
@given(history=st.lists(st.sampled_from(STATES), min_size=1, max_size=8), ended=st.booleans())
@settings(max_examples=200)
def test_ending_drains_to_ended_and_only_end_cancels(history: list[str], ended: bool) -> None:
    """Observed one after the other: ``ending`` is followed only by ``ended`` (or ``failed``),
    and ``canceled`` comes only after the owner sent ``end``."""
    book = _book()
    if ended:
        book.end_sent("sess_1", 0.0)
    failures = []
    for order, status in enumerate(history, start=1):
        verdicts = book.seen(_session(status), float(order), _exchange(), org="own", order=order)
        failures += [v.failure for v in verdicts if v.failure]
    pairs = list(itertools.pairwise(["queued", *history]))
    bad = any(a == "ending" and b not in {"ending", "ended", "failed"} for a, b in pairs) or (
        not ended and any(b == "canceled" and a != b for a, b in pairs)
    )
    assert bool(failures) is bad, (history, failures)


@pytest.mark.req("SES-ST-3", "SES-ST-4", "HAR-5")
@pytest.mark.parametrize(
    ("seen", "answer", "legal"),
    [
        ({"status": "running"}, "ending", True),  # called running before its stamps
        ({"status": "running"}, "canceled", False),  # running: the seed's running row
        ({"status": "queued", "first_frame_at": TS}, "ending", True),
        ({"status": "starting"}, "canceled", True),
        ({"status": "queued", "started_at": TS}, "ended", True),  # placed: either row
        ({"status": "queued"}, "ending", False),
    ],
)
def test_progress_reads_what_the_run_saw(seen: dict[str, Any], answer: str, legal: bool) -> None:
    book = _book({**_session("queued"), **seen})
    assert (_end_failures(book, _session(answer)) == []) is legal


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
    book = SessionBook()
    session = {**_session("running"), "created_at": created, "started_at": started,
               "first_frame_at": first}  # fmt: skip
    verdicts = list(book.seen(session, 1.0, _exchange(), org="own", order=1))
    assert (not any(v.failure for v in verdicts)) is in_order


@pytest.mark.req("RES-SESS-4")
@pytest.mark.parametrize("missing", ["started_at", "first_frame_at"])
def test_a_stamp_once_shown_never_disappears(missing: str) -> None:
    """While it runs a session may show first_frame_at later than running (the seed ties them
    to different events); once shown, a stamp stays as it was."""
    book = _book(_session("running"), _session("running", first_frame=True))
    ended = {**_session("ended", first_frame=True), missing: None}
    verdicts = list(book.seen(ended, 9.0, _exchange(), org="own", order=9))
    assert [v.failure for v in verdicts if v.failure and missing in v.failure]


def _run_check(edits: Edits, check: str) -> Report:
    """Only ``check`` and the model's lifecycle rules (no fuzzing) against the simulator behind
    ``edits``."""
    rules = {"session_transitions", "session_stamps", "session_timers", "terminal_states_final"}
    options = RunOptions(max_examples=0, seed=3, only=frozenset({check, *rules}))
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


@pytest.mark.req("SES-ST-3", "HAR-6")
def test_a_booting_session_called_running_and_canceled_by_end_is_reported() -> None:
    """A deployment that calls a booting session ``running`` (no first frame yet) and cancels it
    on ``end`` breaks the seed's running row: ``running`` ends through ``ending``, whatever its
    stamps say."""
    report = _run_check(Edits(response=(_running_before_first_frame,)), "session_lifecycle_clock")
    assert "session_transitions" in report.failed_names(), report.summary()


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
def test_a_session_seen_running_may_be_drained_by_end() -> None:
    """A session seen ``running`` (no first frame stamped yet) and ended drains, as the seed's
    ``running`` row says: no rule fails."""
    report = _run_check(Edits(response=(_placed_at_once_and_drained,)), "session_lifecycle")
    assert report.failed_names() == [], report.summary()


@pytest.mark.req("SES-ST-4", "HAR-6")
def test_a_queued_session_drained_by_end_is_reported() -> None:
    """The tolerance above is not a blanket one: a deployment that drains a session it still
    calls queued, with no stamp, is reported (the seed's "not yet started" row)."""

    def drain_queued(call: Call, reply: Reply) -> None:
        if call.method == "POST" and call.path.endswith("/end"):
            body = reply.json()
            if isinstance(body, dict) and body.get("status") == "canceled":
                body.update(status="ending", started_at=None, first_frame_at=None)
                reply.set_json(body)

    report = _run_check(Edits(response=(drain_queued,)), "session_lifecycle")
    assert "session_transitions" in report.failed_names(), report.summary()
    message = report.result("session_transitions").failures[0].message
    assert "not yet started" in message


@pytest.mark.req("SES-ST-3", "HAR-6")
def test_a_running_session_canceled_by_end_is_reported() -> None:
    """A session seen ``running`` that ``end`` answers ``canceled`` breaks the running row, even
    without a first frame stamped (the last wave passed it as "starting")."""

    def running_canceled(call: Call, reply: Reply) -> None:
        body = reply.json()
        sessions = [s for s in objects(body) if s.get("object") == "session"]
        for session in sessions:
            if session.get("status") == "queued" and not (
                call.method == "POST" and call.path == "/v1/sessions"
            ):
                session.update(status="running")
        if sessions:
            reply.set_json(body)

    report = _run_check(Edits(response=(running_canceled,)), "session_lifecycle")
    assert "session_transitions" in report.failed_names(), report.summary()
