"""Records as raw values, read back exactly (PERF-2, PERF-3, PERF-4, SIM-1, SIM-2).

Ids, timestamps and events are stored as raw values and formatted or rendered when read; these
tests hold the read-back to what an eager formatting or rendering gives, and check what the logs
keep (the event log may keep nothing, the API log is a ring) and whom an event reaches.
"""

from __future__ import annotations

import contextlib
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from sim.apilog import ApiLog
from sim.clock import Clock, format_timestamp
from sim.config import HistoryConfig, SimConfig
from sim.events import Event, EventLog
from sim.ids import IdFactory, format_id, format_ulid
from sim.journal import Journal
from sim.platform import Platform
from sim.sessions.records import usage_of
from tests.sim.kernel.session_traffic import barge_in, drive, session_platform

EPOCHS = (
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2025, 3, 9, 7, 13, 5, 123456, tzinfo=UTC),
)


@pytest.mark.req("CONV-1", "SIM-2")
@given(ms=st.integers(0, 2**48 - 1), bits=st.integers(0, 2**80 - 1))
def test_ulid_text_is_python_ulids(ms: int, bits: int) -> None:
    assert format_ulid(ms, bits) == str(ULID.from_int((ms << 80) | bits))
    assert format_id("event", ms, bits) == "evt_" + str(ULID.from_int((ms << 80) | bits))


@pytest.mark.req("SIM-1")
@pytest.mark.parametrize("epoch", EPOCHS)
def test_clock_arithmetic_is_the_datetime_arithmetic(epoch: datetime) -> None:
    """Timestamps and ULID milliseconds computed on integers equal the datetime path."""
    clock = Clock(epoch)
    rng = random.Random(5)
    samples = [rng.uniform(0, 1e8) for _ in range(20_000)]
    samples += [i / 1000 for i in range(5_000)] + [0.0, 1e-7, 0.0005, 0.0015, 86_399.9995]
    for seconds in samples:
        moment = epoch + timedelta(microseconds=round(seconds * 1_000_000))
        assert clock.timestamp(seconds) == format_timestamp(moment)
        assert clock.epoch_ms(seconds) == int(moment.timestamp() * 1000)
        assert clock.unix_seconds(seconds) == moment.timestamp()


@pytest.mark.req("SIM-2", "CONV-1")
def test_an_id_made_from_its_parts_is_the_id_made_at_once() -> None:
    clock = Clock(EPOCHS[0])
    clock.advance(1234.5678)
    eager = IdFactory(clock, random.Random(3))
    later = IdFactory(clock, random.Random(3))
    made = eager.new("session")
    bits = later.draw()
    assert made == format_id("session", clock.epoch_ms(clock.now), bits)
    assert later.value() >> 80 == clock.epoch_ms()


@pytest.mark.req("SIM-2", "CONV-1")
@given(
    steps=st.lists(st.sampled_from([0.0, 0.0004, 0.5, 1.0, 61.0, 1048.576, 1100.0]), max_size=40)
)
def test_ids_made_one_after_another_are_the_ids_made_from_their_parts(steps: list[float]) -> None:
    """``IdFactory.new`` keeps the text of the current instant's time part, and of its first six
    characters for their ~17.5 minutes: each id is still the one its parts make, at the same
    instant again, a new instant, and across a boundary of those six characters."""
    clock = Clock(EPOCHS[1])
    eager = IdFactory(clock, random.Random(3))
    later = IdFactory(clock, random.Random(3))
    for step in steps:
        clock.advance(step)
        for kind in ("session", "request"):
            assert eager.new(kind) == format_id(kind, clock.epoch_ms(), later.draw())
            assert eager.value() >> 80 == clock.epoch_ms()
            later.draw()


def _texts_are_the_sorted_json(platform: Platform) -> set[str]:
    """Every stored event's ``text`` is ``json.dumps`` of its payload; the types seen."""
    log = platform.kernel.events
    texts = platform.sessions.events
    for event, payload in zip(log, log.payloads, strict=True):
        expected = json.dumps(dict(event.data), sort_keys=True, separators=(",", ":"))
        assert isinstance(payload, tuple)
        assert texts.text(payload) == expected, event.type
    return {e.type for e in log}


@pytest.mark.req("PERF-2", "SIM-2", "EV-1")
def test_session_events_keep_raw_values_and_read_back_as_they_were_sent() -> None:
    platform, caller = session_platform()
    sent: list[str] = []
    platform.kernel.events.subscribe(lambda e: sent.append(json.dumps(e.to_payload())))
    drive(platform, caller)
    log = platform.kernel.events
    read = [json.dumps(e.to_payload()) for e in log]
    assert read == sent  # rendered long after, byte for byte what subscribers saw at once
    types = {e.type for e in log}
    assert {"session.barge_in", "session.failed", "session.canceled", "session.usage"} <= types
    handles = platform.sessions.events.types
    for payload in log.payloads:  # no copy of a rendered session is kept: five raw values
        assert isinstance(payload, tuple) and payload[0] in handles and len(payload) == 5
        assert not any(isinstance(value, dict) for value in payload)
    assert log.whole == {}  # and every one sits in the typed columns, no tuple kept


@pytest.mark.req("PERF-2", "SIM-2", "EV-1")
def test_every_session_event_shows_the_status_and_usage_of_its_moment() -> None:
    """The service publishes most session events with the usage it knows (0 before the first
    frame's instant is over, the final figure once terminal) instead of asking
    ``SessionEvents.publish`` to work it out: each stored event's status and usage are what
    ``usage_of`` gives for the session at the moment its subscribers are told."""
    platform, caller = session_platform()
    log = platform.kernel.events
    checked: list[str] = []

    def check(event: Event) -> None:
        payload = log.payload(len(log) - 1)  # the event just stored
        assert isinstance(payload, tuple)
        _handle, row, status, seconds, _value = payload
        state = platform.sessions.store.state(row)
        assert (status, seconds) == (state.status, usage_of(state, event.at)), event.type
        checked.append(event.type)

    log.subscribe(check)
    drive(platform, caller)
    assert len(checked) == len(log)
    assert set(checked) >= {
        "session.queued", "session.starting", "session.first_frame", "session.ending",
        "session.ended", "session.usage", "session.failed", "session.canceled",
    }  # fmt: skip
    assert any(e.type == "session.usage" and log.payload(i)[3] > 0 for i, e in enumerate(log))


@pytest.mark.req("PERF-2", "NB-2")
def test_session_event_text_is_the_sorted_json_of_its_payload() -> None:
    platform, caller = session_platform()
    drive(platform, caller)
    log = platform.kernel.events
    codes = {e.data.get("code") for e in log.of_type("session.failed")}
    assert codes == {"no_capacity", "worker_lost"}
    _texts_are_the_sorted_json(platform)


@pytest.mark.req("PERF-2", "NB-2")
def test_event_text_is_the_sorted_json_while_sessions_live_and_after() -> None:
    """The text of every event read mid-run (its session still live, so its fragments come from
    the working state and are not kept) and again once every session is finished (read from the
    store's columns) is ``json.dumps`` of its payload; and a finished session's fragments read
    from the columns are the ones its state gives (the general path)."""
    platform, caller = session_platform()
    body = {
        "avatar_id": "av_stock_aria",
        "transport": {"type": "livekit", "url": "wss://x.example/\u00e9", "room_name": 'r "1"'},
        "metadata": {"z": "żółw ☃", "a": {"y": [1.5, None, False], "b": 1e300}},
    }
    first = barge_in(platform, caller, body)
    live = _texts_are_the_sorted_json(platform)  # the session is live
    assert {"session.first_frame", "session.barge_in"} <= live
    platform.call("endSession", caller, {"session_id": first})
    platform.advance(30)
    drive(platform, caller)
    store = platform.sessions.store
    assert not list(store.live_states())
    finished = _texts_are_the_sorted_json(platform)
    assert {"session.ended", "session.usage", "session.failed", "session.canceled"} <= finished
    texts = platform.sessions.events
    for row in range(len(store)):
        assert texts._row_pieces(row) == texts._state_pieces(store.state(row))


_ODD_PAYLOADS: list[Any] = [
    (0, 7, "running", 12, "worker_1"),  # fits the columns
    (0, 2**32 - 1, "ended", 2**32 - 1, 1.5),  # the largest that fit
    (0, 2**32, "ended", 0, None),  # a row too large
    (0, 3, "ended", -1, None),  # negative seconds
    (0, True, "ended", 0, None),  # a bool is not a row (it would read back as 1)
    (0, 3, "ended", 1.0, None),  # nor is a float
    (-1, 3, "ended", 0, None),  # a handle that no renderer has
    ("x", 3, ["unhashable"], 0, {"a": 1}),
    (0, 1, "queued", 0),  # four values
    {"object": {"id": "x"}},  # a dictionary (``emit``)
]


@pytest.mark.req("PERF-3", "SIM-2")
@given(order=st.permutations(range(len(_ODD_PAYLOADS))))
def test_payloads_read_back_as_given_from_the_columns_or_whole(order: list[int]) -> None:
    """The typed payload columns and the payloads kept whole (``_store``, which sends what
    does not fit to ``whole``) give back every payload as it was given, of the same types,
    whatever came before it."""
    clock = Clock(EPOCHS[0])
    log = EventLog(clock, IdFactory(clock, random.Random(1)))
    payloads = [_ODD_PAYLOADS[i] for i in order]
    for payload in payloads:
        log.emit_payload("session.queued", "org_a", "sess_1", payload, 0.0)
    read = [log.payload(i) for i in range(len(log))]
    assert read == payloads == log.payloads
    assert [list(map(type, p)) for p in read] == [list(map(type, p)) for p in payloads]
    kept = {index for index, payload in enumerate(payloads) if payload not in _ODD_PAYLOADS[:2]}
    assert set(log.whole) == kept  # only the two that fit went to the columns


_ROW_VALUES = st.one_of(st.integers(0, 50), st.sampled_from([-1, 2**32 - 1, 2**32, 2**40]))
_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["session.queued", "session.ended"]),
        st.sampled_from(["org_a", "org_b"]),
        _ROW_VALUES,  # the row
        _ROW_VALUES,  # the seconds
        st.sampled_from(["queued", "ended", None]),  # the status
        st.sampled_from([None, "worker_1", 2.5]),  # the event's own value
        st.booleans(),  # inside an operation (held back until it succeeds)
    ),
    max_size=12,
)


def _logs_of_rows(rows: list[Any], *, cheap: bool) -> tuple[EventLog, list[str]]:
    """A log fed ``rows`` through ``emit_row`` (``cheap``) or ``emit_payload``, and what its
    subscriber saw."""
    clock = Clock(EPOCHS[0])
    journal = Journal()
    log = EventLog(clock, IdFactory(clock, random.Random(1)), journal)
    seen: list[str] = []
    log.subscribe(lambda e: seen.append(json.dumps(e.to_payload())), types=["session.ended"])
    handle = log.register(lambda values: {"values": list(values)})
    for type_, org_id, row, seconds, status, value, held in rows:
        clock.advance(1.5)
        with journal if held else contextlib.nullcontext():
            if cheap:
                log.emit_row(type_, org_id, "s", handle, row, status, seconds, value, clock.now)
            else:
                payload = (handle, row, status, seconds, value)
                log.emit_payload(type_, org_id, "s", payload, clock.now)
    return log, seen


@pytest.mark.req("PERF-3", "SIM-2")
@given(rows=_ROWS)
def test_emit_row_stores_and_tells_what_emit_payload_does(rows: list[Any]) -> None:
    """``emit_row``, the session events' path (no payload tuple, no type tests), stores the same
    columns, keeps the same payloads whole and tells subscribers the same events as the general
    ``emit_payload`` with the same values, rows and seconds that do not fit included, inside an
    operation or not."""
    cheap, cheap_seen = _logs_of_rows(rows, cheap=True)
    general, general_seen = _logs_of_rows(rows, cheap=False)
    assert cheap_seen == general_seen
    assert cheap.payloads == general.payloads
    assert cheap.whole == general.whole
    for column in ("kind_codes", "times", "id_bits", "subjects", "handles", "rows", "seconds"):
        assert getattr(cheap, column) == getattr(general, column), column
    assert cheap.kinds.values == general.kinds.values
    assert [json.dumps(e.to_payload()) for e in cheap] == [
        json.dumps(e.to_payload()) for e in general
    ]


@pytest.mark.req("PERF-3", "SIM-2")
def test_a_log_that_keeps_nothing_still_tells_its_subscribers() -> None:
    kept, caller = session_platform()
    drive(kept, caller)
    dropped, caller = session_platform(HistoryConfig(events=False, transitions=False))
    seen: list[str] = []
    dropped.kernel.events.subscribe(lambda e: seen.append(json.dumps(e.to_payload())))
    drive(dropped, caller)
    assert len(dropped.kernel.events) == 0 and dropped.kernel.events.payloads == []
    assert seen == [json.dumps(e.to_payload()) for e in kept.kernel.events]
    assert all(s.history == () for s in dropped.sessions.sessions())
    # What is kept changes nothing that happens: the same sessions, byte for byte.
    assert [dropped.sessions.render(s.id) for s in dropped.sessions.sessions()] == [
        kept.sessions.render(s.id) for s in kept.sessions.sessions()
    ]


@pytest.mark.req("PERF-4", "EV-1")
def test_a_log_that_keeps_nothing_holds_back_only_what_someone_wants() -> None:
    """Inside an operation a session event is held back until it succeeds; a log that keeps
    nothing holds back only the events someone subscribed to (an event nobody wants would do
    nothing once released). Those are told once the operation succeeds and never if it fails,
    and the id stream moves on exactly as when every event is held."""
    clock = Clock(EPOCHS[0])
    journal = Journal()
    rng = random.Random(7)
    log = EventLog(clock, IdFactory(clock, rng), journal, keep=False)
    seen: list[str] = []
    log.subscribe(lambda e: seen.append(f"{e.type} {e.id}"), types=["session.ended"])
    handle = log.register(lambda values: {"n": values[0]})
    for type_ in ("session.queued", "session.ended"):  # the lanes exist once used outside
        log.emit_row(type_, "org_a", "s", handle, 0, "queued", 0, None, 0.0)
    seen.clear()
    with journal:
        log.emit_row("session.queued", "org_a", "s", handle, 1, "queued", 0, None, 0.0)
        assert journal.deferred == []  # nobody wants it and nothing is stored: not held
        log.emit_row("session.ended", "org_a", "s", handle, 1, "ended", 0, None, 0.0)
        assert len(journal.deferred) == 1 and seen == []
    assert seen == [f"session.ended {format_id('event', clock.epoch_ms(0.0), _bits(7, 4))}"]
    with pytest.raises(RuntimeError):
        _failing(
            journal,
            lambda: log.emit_row("session.ended", "org_a", "s", handle, 2, "ended", 0, None, 0.0),
        )
    assert len(seen) == 1 and journal.deferred == [] and len(log) == 0
    # Every event drew its id's bits, held back or not: the stream is where five draws leave it.
    assert rng.getrandbits(80) == _bits(7, 6)


def _failing(journal: Journal, step: Any) -> None:
    """Take ``step`` in an operation that then fails."""
    with journal:
        step()
        raise RuntimeError("the operation fails")


def _bits(seed: int, draw: int) -> int:
    """The ``draw``-th (1-based) 80-bit draw of ``random.Random(seed)``."""
    rng = random.Random(seed)
    for _ in range(draw - 1):
        rng.getrandbits(80)
    return rng.getrandbits(80)


@pytest.mark.req("PERF-4", "EV-1")
def test_an_event_reaches_only_the_subscribers_that_want_its_type_and_organization() -> None:
    clock = Clock(EPOCHS[0])
    log = EventLog(clock, IdFactory(clock, random.Random(1)))
    calls: dict[str, list[str]] = {"ended": [], "org_b": [], "all": []}
    log.subscribe(lambda e: calls["ended"].append(e.type), types=["session.ended"])
    log.subscribe(lambda e: calls["org_b"].append(e.org_id), org_id="org_b")
    log.subscribe(lambda e: calls["all"].append(e.type))
    built: list[Event] = []
    original = Event.__init__

    def counting(self: Event, *args: Any) -> None:
        built.append(self)
        original(self, *args)

    handle = log.register(lambda values: {"n": values[0]})
    log.emit_values("session.queued", "org_a", "sess_1", handle, (1,), 0.0)
    assert calls == {"ended": [], "org_b": [], "all": ["session.queued"]}
    log.emit_values("session.ended", "org_b", "sess_2", handle, (2,), 0.0)
    assert calls == {
        "ended": ["session.ended"],
        "org_b": ["org_b"],
        "all": ["session.queued", "session.ended"],
    }
    lonely = EventLog(clock, IdFactory(clock, random.Random(1)))
    lonely.subscribe(lambda e: calls["ended"].append(e.type), types=["session.ended"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Event, "__init__", counting)
        for _ in range(50):  # nobody wants these: no event object is even built
            lonely.emit_values("session.queued", "org_a", "s", handle, (3,), 0.0)
    assert built == [] and len(lonely) == 50


@pytest.mark.req("PERF-4", "EV-3")
def test_webhooks_listen_only_to_organizations_with_an_endpoint() -> None:
    platform, caller = session_platform()
    other = platform.admin.create_organization("Other", "enterprise")
    reached: list[str] = []
    dispatcher = platform.webhooks
    original = dispatcher._on_event

    def spy(event: Event) -> None:
        reached.append(event.org_id)
        original(event)

    dispatcher._on_event = spy  # type: ignore[method-assign]
    platform.admin.register_webhook(other["id"], "https://hooks.example/in")
    drive(platform, caller)  # all of it in the first organization, which has no endpoint
    assert reached == []
    assert dispatcher.deliveries() == []


@pytest.mark.req("PERF-3", "SIM-8", "SIM-2")
def test_the_api_log_is_a_ring_of_the_newest_calls() -> None:
    ring = ApiLog(size=10)
    for i in range(1_000):
        ring.append(float(i), "getStatus", None if i % 2 else "org_a", "ok", None)
        assert len(ring) == min(i + 1, 10)
        assert len(ring.times) <= 20  # never more than twice its size in memory
    assert [c.at for c in ring] == [float(i) for i in range(990, 1000)]
    assert ring.dropped == 990
    assert [c.org_id for c in ring][:2] == ["org_a", None]
    everything = ApiLog(size=None)
    for i in range(1_000):
        everything.append(float(i), "getStatus", "org_a", "ok", None)
    assert len(everything) == 1_000 and everything.dropped == 0
    assert SimConfig().history.api_log_size is not None  # bounded unless asked otherwise
    platform = Platform.create(SimConfig(history=HistoryConfig(api_log_size=3)))
    for _ in range(7):
        platform.call("getStatus", None, {})
    assert len(platform.api_log) == 3 and platform.api_log.dropped == 4
