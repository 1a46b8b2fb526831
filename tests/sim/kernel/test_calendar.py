"""The clock's calendar: timers take the place a ``Timeout`` would, and the clock keeps time."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from sim.clock import Clock, Timer

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _fired_order(delays: list[float], as_timer: list[bool]) -> list[int]:
    """Schedule one callback per delay, as a ``Timer`` (``Clock.after``) or a ``Timeout``, and
    run them all; return the indices in firing order. Also checks the event count matches."""
    clock = Clock(EPOCH)
    clock.advance(10.0)
    fired: list[int] = []

    def record(timer: Timer) -> None:
        fired.append(timer.value)

    before = clock.scheduled_events
    for index, (delay, timer_kind) in enumerate(zip(delays, as_timer, strict=True)):
        if timer_kind:
            timer = Timer()
            timer.callbacks = [record]
            timer.value = index
            clock.after(delay, timer)
        else:
            clock.env.timeout(delay).callbacks.append(lambda _e, i=index: fired.append(i))
    assert clock.scheduled_events - before == len(delays)
    clock.advance(100.0)
    return fired


@pytest.mark.req("PERF-1")
def test_a_timer_fires_where_a_timeout_would_among_equal_and_other_times() -> None:
    """n = 200 callbacks over six distinct delays (many ties), each scheduled at random as a
    ``Timer`` or a ``Timeout``: the firing order is exactly the all-``Timeout`` order (time,
    then scheduling order), so swapping one for the other cannot change a run's results."""
    rng = random.Random(7)
    delays = [rng.choice([0, 0.0, 1.5, 2.0, 2.0000001, 30.0]) for _ in range(200)]
    reference = _fired_order(delays, [False] * len(delays))
    mixed = _fired_order(delays, [rng.random() < 0.5 for _ in delays])
    assert mixed == reference
    assert reference != sorted(reference, reverse=True)  # ties really kept their order


@pytest.mark.req("SIM-1")
def test_a_timer_never_counts_as_failed_and_a_late_one_fires_now() -> None:
    """``Environment.step`` reads ``_ok`` after the callbacks: a ``Timer`` must say it did not
    fail, or the environment would raise its value. A negative delay means now."""
    clock = Clock(EPOCH)
    clock.advance(3.0)
    seen: list[float] = []
    clock.call_after(-5.0, lambda _timer: seen.append(clock.now))
    clock.call_after(1.0, lambda _timer: seen.append(clock.now))
    clock.advance(1.0)
    assert seen == [3.0, 4.0]


@pytest.mark.req("SIM-1")
def test_follow_acts_at_each_instant_in_order_and_at_once_for_past_ones() -> None:
    clock = Clock(EPOCH)
    clock.advance(5.0)
    seen: list[tuple[float, str]] = []
    plan = [(1.0, "past"), (5.0, "now"), (7.5, "a"), (7.5, "b"), (9.0, "c")]
    before = clock.scheduled_events
    clock.follow(plan, lambda tag: seen.append((clock.now, tag)))
    assert seen == []  # from the next step on
    clock.advance(10.0)
    assert seen == [(5.0, "past"), (5.0, "now"), (7.5, "a"), (7.5, "b"), (9.0, "c")]
    assert clock.scheduled_events - before == 3  # one timer per distinct instant


@pytest.mark.req("SIM-1")
def test_the_clock_keeps_simpys_time_and_refuses_to_go_on_after_a_step_behind_its_back() -> None:
    """``Clock.now`` is the time SimPy gives each event as it runs it, stepped one at a time or
    advanced; stepping the environment directly would leave it behind, so the clock refuses
    to advance after that instead of answering with a stale time."""
    clock = Clock(EPOCH)
    seen: list[tuple[float, float]] = []
    for delay in (2.0, 4.0, 6.0):
        clock.call_after(delay, lambda _timer: seen.append((clock.now, float(clock.env.now))))
    clock.step()
    clock.advance(3.0)
    assert seen == [(2.0, 2.0), (4.0, 4.0)]
    assert clock.now == clock.env.now == 5.0
    clock.env.step()  # behind the clock's back
    with pytest.raises(RuntimeError, match="outside the clock"):
        clock.advance(1.0)
