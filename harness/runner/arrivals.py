"""Arrival instants of a scenario's processes, drawn up front from seeded streams.

Why up front: an arrival process is independent of what the service answers, so its instants can
be drawn before the simulation runs. One dispatcher then walks the merged list, which costs one
event per arrival and nothing per idle hour, and the draws of one process never depend on how
the others interleave.
"""

from __future__ import annotations

import math
import random
from datetime import datetime

from harness.scenarios.model import Arrival, Burst, Diurnal, Poisson

__all__ = ["arrival_times", "poisson_times"]

HOUR = 3600.0


def poisson_times(
    rate_per_hour: float, start: float, end: float, rng: random.Random
) -> list[float]:
    """Instants of a Poisson process of ``rate_per_hour`` in ``[start, end)``."""
    times: list[float] = []
    if rate_per_hour <= 0:
        return times
    rate = rate_per_hour / HOUR
    t = start + rng.expovariate(rate)
    while t < end:
        times.append(t)
        t += rng.expovariate(rate)
    return times


def _diurnal(arrival: Diurnal, duration: float, epoch: datetime, rng: random.Random) -> list[float]:
    # A Poisson process is memoryless, so a piecewise-constant rate is exactly a restart at each
    # hour boundary with the new rate.
    offset = epoch.hour * HOUR + epoch.minute * 60 + epoch.second
    times: list[float] = []
    for hour in range(math.ceil(duration / HOUR)):
        start = hour * HOUR
        factor = arrival.profile[int((offset + start) // HOUR) % 24]
        rate = arrival.base_rate_per_hour * factor
        times += poisson_times(rate, start, min(start + HOUR, duration), rng)
    return times


def arrival_times(
    arrival: Arrival, duration: float, epoch: datetime, rng: random.Random
) -> list[float]:
    """The sorted instants in ``[0, duration)`` at which ``arrival`` brings a client."""
    if isinstance(arrival, Poisson):
        end = duration if arrival.end is None else min(arrival.end, duration)
        return poisson_times(arrival.rate_per_hour, arrival.start, end, rng)
    if isinstance(arrival, Diurnal):
        return _diurnal(arrival, duration, epoch, rng)
    if isinstance(arrival, Burst):
        times = sorted(arrival.at + rng.uniform(0.0, arrival.within) for _ in range(arrival.count))
        return [t for t in times if t < duration]
    raise TypeError(f"unknown arrival {arrival!r}")  # pragma: no cover
