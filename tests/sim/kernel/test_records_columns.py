"""Records as raw values, read back exactly (PERF-2, PERF-3, PERF-4, SIM-1, SIM-2).

Ids, timestamps and events are stored as raw values and formatted or rendered when read; these
tests hold the read-back to what an eager formatting or rendering gives, and check what the logs
keep (the event log may keep nothing, the API log is a ring) and whom an event reaches.
"""

from __future__ import annotations

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
from tests.sim.kernel.session_traffic import drive, session_platform

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
    handles = set(platform.sessions.events.handles.values())
    for payload in log.payloads:  # no copy of a rendered session is kept: five raw values
        assert isinstance(payload, tuple) and payload[0] in handles and len(payload) == 5
        assert not any(isinstance(value, dict) for value in payload)
    assert log.export().columns["payload"].values == {}  # no payload is kept whole


@pytest.mark.req("PERF-2", "SIM-2", "EV-1")
def test_every_session_event_shows_the_status_and_usage_of_its_moment() -> None:
    """Each stored event's status and usage are what ``usage_of`` gives for the session at the
    moment its subscribers are told."""
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


_PAYLOADS = st.lists(
    st.one_of(
        st.tuples(
            st.integers(0, 2**64 - 1),  # the row
            st.sampled_from(["queued", "ended", None]),  # the status
            st.integers(0, 2**64 - 1),  # the seconds
            st.sampled_from([None, "worker_1", 2.5]),  # the event's own value
        ),
        st.dictionaries(st.sampled_from(["object", "reason"]), st.just({"id": "x"})),
    ),
    max_size=12,
)


@pytest.mark.req("PERF-3", "SIM-2")
@given(payloads=_PAYLOADS)
def test_payloads_read_back_as_given_from_the_columns_or_whole(payloads: list[Any]) -> None:
    """A producer's values sit in the typed columns and a dictionary is kept whole: each reads
    back as it was given, of the same types, whatever came before it."""
    clock = Clock(EPOCHS[0])
    log = EventLog(clock, IdFactory(clock, random.Random(1)))
    handle = log.register(lambda values: {"values": list(values)})
    for payload in payloads:
        if isinstance(payload, dict):
            log.emit("billing.low_balance", "org_a", payload, subject="s")
        else:
            log.emit_values("session.queued", "org_a", "s", handle, *payload, 0.0)
    expected = [p if isinstance(p, dict) else (handle, p[0], p[1], p[2], p[3]) for p in payloads]
    read = [log.payload(i) for i in range(len(log))]
    assert read == expected == log.payloads
    assert [list(map(type, p)) for p in read] == [list(map(type, p)) for p in expected]
    with pytest.raises(OverflowError):  # a negative row fits no column: refused, not kept
        log.emit_values("session.queued", "org_a", "s", handle, -1, None, 0, None, 0.0)


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
        log.emit_values(type_, "org_a", "s", handle, 0, "queued", 0, None, 0.0)
    seen.clear()
    with journal:
        log.emit_values("session.queued", "org_a", "s", handle, 1, "queued", 0, None, 0.0)
        assert journal.deferred == []  # nobody wants it and nothing is stored: not held
        log.emit_values("session.ended", "org_a", "s", handle, 1, "ended", 0, None, 0.0)
        assert len(journal.deferred) == 1 and seen == []
    assert seen == [f"session.ended {format_id('event', clock.epoch_ms(0.0), _bits(7, 4))}"]
    with pytest.raises(RuntimeError):
        _failing(
            journal,
            lambda: log.emit_values(
                "session.ended", "org_a", "s", handle, 2, "ended", 0, None, 0.0
            ),
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
    log.emit_values("session.queued", "org_a", "sess_1", handle, 1, None, 0, None, 0.0)
    assert calls == {"ended": [], "org_b": [], "all": ["session.queued"]}
    log.emit_values("session.ended", "org_b", "sess_2", handle, 2, None, 0, None, 0.0)
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
            lonely.emit_values("session.queued", "org_a", "s", handle, 3, None, 0, None, 0.0)
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


@pytest.mark.req("PERF-2", "SIM-2", "NB-2")
def test_the_api_logs_export_is_the_calls_it_shows() -> None:
    """The API log exports the calls it shows (a ring's newest), each column the ``ApiCall``
    field of the same name, read one by one."""
    from harness.runner.columns import to_frame

    ring = ApiLog(size=5)
    for i in range(12):
        outcome, error = ("ok", None) if i % 3 else ("rate_limited", "rate_limit")
        ring.append(float(i), "createSession", None if i % 4 == 0 else "org_a", outcome, error)
    frame = to_frame(ring.export(), Clock(EPOCHS[0]))
    calls = list(ring)
    assert len(frame) == len(calls) == 5
    assert list(frame["at"]) == [Clock(EPOCHS[0]).datetime_at(c.at) for c in calls]
    for name in ("operation_id", "org_id", "outcome", "error_type"):
        shown = [None if isinstance(v, float) else v for v in frame[name].astype(object)]
        assert shown == [getattr(c, name) for c in calls], name
