"""The session core's timers take the place a ``Timeout`` would on SimPy's calendar."""

from __future__ import annotations

import random
from heapq import heappush

import pytest
import simpy

from sim.cost import scheduled_events
from sim.sessions.timers import NORMAL, Timer, calendar


def _fired_order(delays: list[float], as_timer: list[bool]) -> list[int]:
    """Schedule one callback per delay, as a ``Timer`` or a ``Timeout``, and run them all;
    return the indices in firing order. Also checks the event count matches."""
    env = simpy.Environment(initial_time=10.0)
    queue, eid = calendar(env)
    fired: list[int] = []

    def record(timer: Timer) -> None:
        fired.append(timer.value)

    for index, (delay, timer_kind) in enumerate(zip(delays, as_timer, strict=True)):
        if timer_kind:
            timer = Timer()
            timer.callbacks = [record]
            timer.value = index
            heappush(queue, (env._now + delay, NORMAL, next(eid), timer))
        else:
            env.timeout(delay).callbacks.append(lambda _e, i=index: fired.append(i))
    assert scheduled_events(env) == len(delays)
    env.run()
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


def test_a_timer_never_counts_as_failed() -> None:
    """``Environment.step`` reads ``_ok`` after the callbacks: a ``Timer`` must say it did not
    fail, or the environment would raise its value."""
    env = simpy.Environment()
    queue, eid = calendar(env)
    timer = Timer()
    timer.callbacks = []
    heappush(queue, (env._now + 1.0, NORMAL, next(eid), timer))
    env.run()
    assert env.now == 1.0 and timer.callbacks is None
