"""Arrival instants of a scenario's processes, drawn lazily from seeded streams.

Why from a stream of their own: an arrival process is independent of what the service answers,
so its instants depend only on its stream; one dispatcher walks the sources merged in time
order, which costs one event per arrival and nothing per idle hour, and the draws of one process
never depend on how the others interleave.

Why lazily: drawing a month's instants up front kept a tuple per arrival (about 150 MB for a
million); a generator per source keeps one pending instant each and draws exactly the same
values, since nothing else draws from its stream. ``arrival_times`` and ``poisson_times`` give
the same instants as lists.

Why ``follow`` walks a plan with timer callbacks rather than a SimPy process: a process pays a
generator resume on top of each timer; ``follow`` pays the timer alone, one per distinct instant
(arrivals due at the same instant are started together), and a plain calendar entry at that.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from heapq import heappush
from itertools import repeat
from operator import itemgetter
from typing import Generic, TypeVar

import simpy

from harness.scenarios.model import Arrival, Burst, Diurnal, Poisson
from sim.sessions.timers import NORMAL, Timer, calendar

__all__ = [
    "arrival_instants",
    "arrival_times",
    "follow",
    "merged",
    "poisson_instants",
    "poisson_times",
]

HOUR = 3600.0
T = TypeVar("T")


def poisson_instants(
    rate_per_hour: float, start: float, end: float, rng: random.Random
) -> Iterator[float]:
    """Instants of a Poisson process of ``rate_per_hour`` in ``[start, end)``, in order."""
    return _piecewise_poisson(((rate_per_hour, start, end),), rng)


def _piecewise_poisson(
    pieces: Iterable[tuple[float, float, float]], rng: random.Random
) -> Iterator[float]:
    """Instants of a Poisson process whose rate is constant on each piece ``(rate_per_hour,
    start, end)`` (in time order, not overlapping), in order.

    A Poisson process is memoryless, so a piecewise-constant rate is exactly a restart at each
    piece's start with its rate. The gaps are ``rng.expovariate(rate)`` written out (CPython's
    ``-log(1.0 - random()) / rate``; a test holds them equal): the same draws, without a
    Python call per instant, and one generator for every piece rather than one per piece.
    """
    random, log = rng.random, math.log
    for rate_per_hour, start, end in pieces:
        if rate_per_hour <= 0:
            continue
        rate = rate_per_hour / HOUR
        t = start + -log(1.0 - random()) / rate
        while t < end:
            yield t
            t += -log(1.0 - random()) / rate


def _diurnal(
    arrival: Diurnal, duration: float, epoch: datetime, rng: random.Random
) -> Iterator[float]:
    return _piecewise_poisson(_hours(arrival, duration, epoch), rng)


def _hours(
    arrival: Diurnal, duration: float, epoch: datetime
) -> Iterator[tuple[float, float, float]]:
    """Each hour of the run as ``(rate_per_hour, start, end)``, with the profile's rate."""
    offset = epoch.hour * HOUR + epoch.minute * 60 + epoch.second
    for hour in range(math.ceil(duration / HOUR)):
        start = hour * HOUR
        factor = arrival.profile[int((offset + start) // HOUR) % 24]
        yield arrival.base_rate_per_hour * factor, start, min(start + HOUR, duration)


def arrival_instants(
    arrival: Arrival, duration: float, epoch: datetime, rng: random.Random
) -> Iterator[float]:
    """The instants in ``[0, duration)`` at which ``arrival`` brings a client, in order."""
    if isinstance(arrival, Poisson):
        end = duration if arrival.end is None else min(arrival.end, duration)
        return poisson_instants(arrival.rate_per_hour, arrival.start, end, rng)
    if isinstance(arrival, Diurnal):
        return _diurnal(arrival, duration, epoch, rng)
    if isinstance(arrival, Burst):  # a flash crowd is drawn whole: its instants come unsorted
        times = sorted(arrival.at + rng.uniform(0.0, arrival.within) for _ in range(arrival.count))
        return iter([t for t in times if t < duration])
    raise TypeError(f"unknown arrival {arrival!r}")  # pragma: no cover


def poisson_times(
    rate_per_hour: float, start: float, end: float, rng: random.Random
) -> list[float]:
    """``poisson_instants`` as a list."""
    return list(poisson_instants(rate_per_hour, start, end, rng))


def arrival_times(
    arrival: Arrival, duration: float, epoch: datetime, rng: random.Random
) -> list[float]:
    """``arrival_instants`` as a list."""
    return list(arrival_instants(arrival, duration, epoch, rng))


def merged(sources: Iterable[tuple[Iterator[float], T]]) -> Iterator[tuple[float, T]]:
    """Every instant of every source as ``(instant, tag)``, in time order, ties in source order.

    This is the order of sorting every arrival by (instant, source, sequence): each source is
    already in time order and ``heapq.merge`` is stable. A single source (most scenarios) is
    already that order: it is tagged without the merge's step per instant.
    """
    tagged = [zip(times, repeat(tag)) for times, tag in sources]
    if len(tagged) == 1:
        return tagged[0]
    return heapq.merge(*tagged, key=itemgetter(0))


class _Follower(Generic[T]):
    """``follow``'s state: the plan, the action and the pending instant's tag.

    Its timers are ``sim.sessions.timers.Timer`` entries pushed on SimPy's calendar where a
    ``Timeout`` would be (the same instant and order) without the ``Timeout``'s two frames; they
    share one callbacks list, which SimPy never changes."""

    __slots__ = ("act", "eid", "env", "on_wake", "plan", "queue", "tag")
    tag: T

    def __init__(
        self, env: simpy.Environment, plan: Iterator[tuple[float, T]], act: Callable[[T], object]
    ) -> None:
        self.env = env
        self.plan = plan
        self.act = act
        self.queue, self.eid = calendar(env)
        self.on_wake: list[Callable[[Timer], None]] = [self.wake]

    def sleep(self, at: float, tag: T) -> None:
        """Wake at ``at`` (or now, if it is past) to act on ``tag``."""
        self.tag = tag
        now = self.env._now
        timer = Timer()
        timer.callbacks = self.on_wake
        # ``env.timeout(max(0.0, at - now))``, pushed as ``Environment.schedule`` pushes it.
        heappush(self.queue, (now + max(0.0, at - now), NORMAL, next(self.eid), timer))

    def wake(self, _timer: Timer) -> None:
        env, act = self.env, self.act
        act(self.tag)
        for at, tag in self.plan:
            now = env._now
            if at > now:  # ``sleep`` inlined (no ``max``: ``at`` is ahead): once per arrival
                self.tag = tag
                timer = Timer()
                timer.callbacks = self.on_wake
                heappush(self.queue, (now + (at - now), NORMAL, next(self.eid), timer))
                return
            act(tag)


def follow(
    env: simpy.Environment, plan: Iterable[tuple[float, T]], act: Callable[[T], object]
) -> None:
    """Call ``act(tag)`` at each ``(instant, tag)`` of ``plan`` (in time order) on ``env``'s
    clock, from the next step on: one timer per distinct instant, each drawn as it comes."""
    follower = _Follower(env, iter(plan), act)
    first = next(follower.plan, None)
    if first is not None:
        follower.sleep(*first)
