"""The virtual clock: forward-only advance that runs every due event, in order (SIM-1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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


@pytest.mark.req("SIM-1", "CONV-2")
@pytest.mark.parametrize(
    "epoch",
    [
        datetime(999, 12, 31, 23, 58, 59, 999_500, tzinfo=UTC),  # four-digit years before 1000
        datetime(2028, 2, 28, 23, 59, 30, tzinfo=UTC),  # a leap day
    ],
)
def test_every_instant_of_new_minutes_and_days_is_written_like_format_timestamp(
    epoch: datetime,
) -> None:
    """A new minute's text comes from its day's and a table of minutes, kept and reused: held to
    ``format_timestamp`` every 11 ms for 200 s across minute, hour, day and year boundaries, in
    an order that visits minutes both fresh and again."""
    clock = Clock(epoch)
    seconds = [step / 1000 for step in range(0, 200_000, 11)] + [0.0, 60.0, 86_400.0, 3_600.0]
    for at in seconds + seconds[::-1]:
        moment = epoch + timedelta(microseconds=round(at * 1_000_000))
        assert clock.timestamp(at) == format_timestamp(moment)


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
