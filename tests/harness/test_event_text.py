"""The events table's texts assembled column by column equal the texts written one by one (NB-2,
PERF-2).

``harness.event_text`` fills the slots of ``SessionEvents.layout`` for many events at once; these
tests hold its result to ``SessionEvents.text`` (the scalar path) and to ``json.dumps`` of the
rendered payload over a varied run, and its bulk conversions (timestamps, JSON of values, the
sessions' field texts) to their one-value counterparts.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.event_text import _parts, event_texts, json_texts, session_field_columns, stamps
from sim.clock import Clock
from sim.events import EventLog
from sim.platform import Platform
from sim.sessions.events import OBJECT_FIELDS, SESSION_EVENT_FIELDS, SessionEvents, Slot
from tests.sim.kernel.session_traffic import barge_in, drive, session_platform

_TRANSPORT = {"type": "livekit", "url": "wss://p", "room_name": "p"}


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _one_by_one(log: EventLog, events: SessionEvents, index: int) -> str:
    """An event's text written alone: ``SessionEvents.text`` for a session event, ``json.dumps``
    of the rendered payload for any other (what the collector hands ``event_texts``)."""
    payload = log.payload(index)
    if type(payload) is tuple and payload[0] in events.types:
        return events.text(payload)
    return _dumps(log.render(payload))


def _texts(platform: Platform, block: int) -> list[str]:
    log, events = platform.kernel.events, platform.sessions.events
    store, clock = platform.sessions.store, platform.clock
    written = event_texts(log, events, store, clock, lambda i: _one_by_one(log, events, i), block)
    return [str(text) for text in written.to_pylist()]


def _varied_run() -> Platform:
    """Sessions that end, are canceled, fail (no capacity, a lost worker), hear a barge-in, one
    pipecat session, unusual metadata and transports (non-ASCII text, quotes, nesting), a run's
    and an avatar's events between them, a session event kept whole (its usage too large for
    the columns), and sessions still live at the end."""
    platform, caller = session_platform()
    keys = [platform.admin.create_key(caller.org_id)["key"] for _ in range(4)]
    callers = [platform.authenticate(f"Bearer {k}") for k in keys]
    odd = {
        "avatar_id": "av_stock_aria",
        "transport": {"url": "wss://x.example/\u00e9\n", "type": "livekit", "room_name": 'r "1"\\'},
        "metadata": {"z": "żółw ☃ \u2028", "a": {"y": [1.5, None, False], "b": 1e300, "c": -0}},
    }
    first = barge_in(platform, callers[0], odd)
    platform.call("createRun", caller, {"model_id": "sim/speech", "body": {"input": {"text": "x"}}})
    platform.call("createPipecatSession", callers[1], {"body": {"avatar_id": "av_stock_aria"}})
    platform.advance(30)
    platform.call("endSession", callers[0], {"session_id": first})
    platform.advance(30)
    drive(platform, caller)
    platform.sessions.faults.set_capacity(4)
    live = platform.call("createSession", callers[2], {"body": odd}).body
    assert isinstance(live, dict)
    platform.advance(15)
    events = platform.sessions.events
    state = platform.sessions.store.live_by_id(str(live["id"]))
    assert state is not None
    log = platform.kernel.events
    log.emit_row(  # usage beyond the columns' range: kept whole
        "session.usage", state.org_id, state.id, events.handles["session.usage"], state.number,
        state.status, 2**32, None, platform.clock.now,
    )  # fmt: skip
    plain = {"avatar_id": "av_stock_aria", "transport": _TRANSPORT}
    platform.call("createSession", callers[3], {"body": plain})
    platform.advance(3)
    return platform


@pytest.fixture(scope="module")
def varied() -> Platform:
    return _varied_run()


@pytest.mark.req("NB-2", "PERF-2")
@pytest.mark.parametrize("block", [1024, 2048, 1 << 14])
def test_texts_assembled_in_blocks_are_the_texts_written_one_by_one(
    varied: Platform, block: int
) -> None:
    log, events = varied.kernel.events, varied.sessions.events
    store = varied.sessions.store
    seen = {e.type for e in log}
    assert set(SESSION_EVENT_FIELDS) <= seen and {"run.queued", "avatar.ready"} & seen
    assert log.whole and list(store.live_states())
    assert any(store.state(row).billing_surface == "pipecat" for row in range(len(store)))
    expected = [_dumps(dict(event.data)) for event in log]
    assert [_one_by_one(log, events, i) for i in range(len(log))] == expected
    assert _texts(varied, block) == expected


@pytest.mark.req("NB-2", "PERF-2")
def test_texts_of_a_log_without_session_events_or_without_events() -> None:
    platform, caller = session_platform()
    assert _texts(platform, 1024) == []
    platform.call("createRun", caller, {"model_id": "sim/speech", "body": {"input": {"text": "x"}}})
    platform.advance(60)
    log = platform.kernel.events
    assert len(log) and not set(SESSION_EVENT_FIELDS) & {e.type for e in log}
    assert _texts(platform, 1024) == [_dumps(dict(event.data)) for event in log]


@pytest.mark.req("NB-2", "PERF-2")
def test_another_producers_values_in_the_columns_are_written_one_by_one() -> None:
    """A payload of another renderer whose values fit the columns (a row, seconds) but whose
    third value is not a status is not assembled: ``other`` writes it, between session events."""
    platform, caller = session_platform()
    log = platform.kernel.events
    handle = log.register(lambda values: {"values": list(values)})
    log.emit_values("probe.odd", caller.org_id, "x", handle, (0, [1, "a"], 0, None), 0.0)
    barge_in(platform, caller, {"avatar_id": "av_stock_aria", "transport": _TRANSPORT})
    log.emit_values("probe.odd", caller.org_id, "y", handle, (0, "running", 3, 1.5), 1.0)
    assert not log.whole
    assert _texts(platform, 1024) == [_dumps(dict(event.data)) for event in log]


@pytest.mark.req("NB-2", "PERF-2")
def test_a_layout_filled_with_a_sessions_fields_is_the_events_text(varied: Platform) -> None:
    """``layout`` and ``session_fields`` say what the text is: filled by hand for every stored
    session event, they give ``text``; the object's fields are ``to_resource``'s keys."""
    log, events, store = varied.kernel.events, varied.sessions.events, varied.sessions.store
    for index in range(len(log)):
        payload = log.payload(index)
        if type(payload) is not tuple or payload[0] not in events.types:
            continue
        handle, row, status, seconds, value = payload
        state = store.state(row)
        assert tuple(sorted(state.to_resource(varied.clock, 25))) == OBJECT_FIELDS
        fields = events.session_fields(state)
        shown = {
            "status": _dumps(status),
            "usage": events.usage_text(seconds),
            "value": _dumps(value),
            "error": fields["error"] if status == "failed" else "null",
            "first_frame_at": "null" if status in {"created", "queued", "starting"} else None,
            "started_at": "null" if status in {"created", "queued"} else None,
        }
        text = "".join(
            item if isinstance(item, str) else shown.get(item.name) or fields[item.name]
            for item in events.layout(events.types[handle])
        )
        assert text == events.text(payload)
    assert all(isinstance(i, str) or i != Slot("object") for i in events.layout("session.ended"))


@pytest.mark.req("NB-2", "PERF-2")
def test_the_sessions_fields_read_in_bulk_are_the_ones_read_one_by_one(varied: Platform) -> None:
    events, store = varied.sessions.events, varied.sessions.store
    columns, where = session_field_columns(events, store, varied.clock)
    assert set(columns) == set(events.session_fields(store.state(0)))
    for row in range(len(store)):
        fields = events.session_fields(store.state(row))
        assert {name: columns[name][where[row]].as_py() for name in columns} == fields, row


@pytest.mark.req("NB-2", "SIM-1")
@given(
    epoch=st.sampled_from(
        [datetime(2026, 1, 1, tzinfo=UTC), datetime(999, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)]
    ),
    seconds=st.lists(
        st.floats(0, 3e9, allow_nan=False)
        | st.sampled_from([math.nan, 0.0, 0.0005, 0.0015, 59.9995, 86_399.9995]),
        max_size=40,
    ),
)
def test_timestamps_written_in_bulk_are_the_clocks(epoch: datetime, seconds: list[float]) -> None:
    clock = Clock(epoch)
    written = stamps(clock, np.array(seconds, dtype=np.float64)).to_pylist()
    assert written == ["null" if s != s else f'"{clock.timestamp(s)}"' for s in seconds]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.req("NB-2")
@given(
    values=st.lists(st.text(), max_size=8)
    | st.lists(st.floats(), max_size=8)
    | st.lists(st.integers() | st.booleans(), max_size=8)
    | st.lists(_JSON, max_size=8)
)
def test_json_texts_are_json_dumps(values: list[Any]) -> None:
    assert json_texts(values) == [_dumps(value) for value in values]


_LAYOUT = st.lists(
    st.sampled_from(["a", "b", "value", "usage"]).map(Slot) | st.text("{}:,x", max_size=3),
    max_size=8,
).map(tuple)


@pytest.mark.req("NB-2")
@given(layouts=st.lists(_LAYOUT, min_size=1, max_size=4))
def test_the_layouts_aligned_as_one_sequence_of_parts_give_each_layouts_text(
    layouts: list[tuple[str | Slot, ...]],
) -> None:
    """Whatever the event types' layouts (slots in any order, repeated, missing), the parts
    ``event_texts`` joins give each type its own text: its literals, and its slots in order."""
    filled = {"a": "<a>", "b": "<b>", "value": "<v>", "usage": "<u>"}
    parts = _parts(layouts)
    for number, layout in enumerate(layouts):
        expected = "".join(i if isinstance(i, str) else filled[i.name] for i in layout)
        written = "".join(
            part.literal
            if part.literal is not None
            else part.by_type[number]
            if part.by_type is not None
            else filled[str(part.slot)]
            if part.present is None or part.present[number]
            else ""
            for part in parts
        )
        assert written == expected
