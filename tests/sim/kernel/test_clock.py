"""The virtual clock: forward-only advance that runs every due event, in order (SIM-1)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sim.clock import Clock, format_timestamp

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.req("SIM-1")
def test_advance_runs_due_events_in_order_including_the_boundary() -> None:
    clock = Clock(EPOCH)
    seen: list[tuple[str, float]] = []

    def proc(name: str, delay: float):  # type: ignore[no-untyped-def]
        yield clock.env.timeout(delay)
        seen.append((name, clock.now))

    clock.env.process(proc("b", 2.0))
    clock.env.process(proc("a", 1.0))
    clock.env.process(proc("c", 5.0))
    clock.advance(2.0)
    assert seen == [("a", 1.0), ("b", 2.0)]
    assert clock.now == 2.0
    clock.advance(10.0)
    assert [n for n, _ in seen] == ["a", "b", "c"]
    assert clock.now == 12.0


@pytest.mark.req("SIM-1")
def test_clock_is_forward_only() -> None:
    clock = Clock(EPOCH)
    clock.advance(5)
    with pytest.raises(ValueError, match="forward"):
        clock.advance(-1)
    with pytest.raises(ValueError, match="forward"):
        clock.advance_to(4.0)


@pytest.mark.req("SIM-1", "CONV-2")
def test_timestamps_are_iso8601_utc_from_the_epoch() -> None:
    clock = Clock(EPOCH)
    assert clock.timestamp() == "2026-01-01T00:00:00.000Z"
    clock.advance(90061.5)
    assert clock.timestamp() == "2026-01-02T01:01:01.500Z"
    assert clock.seconds_at(clock.now_datetime()) == pytest.approx(90061.5)
    assert clock.unix_seconds(0) == EPOCH.timestamp()
    assert format_timestamp(datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)).endswith(".123Z")


@pytest.mark.req("SIM-1")
def test_next_event_at_reports_the_heap_head() -> None:
    clock = Clock(EPOCH)
    assert clock.next_event_at() is None
    clock.env.timeout(7.5)
    assert clock.next_event_at() == 7.5


@pytest.mark.req("SIM-1")
def test_advancing_leaves_nothing_behind_in_the_queue() -> None:
    clock = Clock(EPOCH)
    clock.advance(5)
    assert clock.next_event_at() is None
    assert clock.now == 5.0
