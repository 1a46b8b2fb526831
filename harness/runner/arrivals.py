"""Arrival instants of a scenario's processes, drawn lazily from seeded streams.

Why from a stream of their own: an arrival process is independent of what the service answers,
so its instants depend only on its stream; one dispatcher walks the sources merged in time
order, which costs one event per arrival and nothing per idle hour, and the draws of one process
never depend on how the others interleave.

Why lazily: drawing a month's instants up front would keep a tuple per arrival; a generator per
source keeps one pending instant each and draws exactly the same
values, since nothing else draws from its stream. ``arrival_times`` and ``poisson_times`` give
the same instants as lists. The runner walks the merged instants on the platform's clock with
``Clock.follow``: one timer per distinct instant, drawn as it comes.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from operator import itemgetter
from typing import TypeVar

import pandas as pd

from harness.scenarios.parts import Arrival, Burst, Diurnal, Poisson, Recorded
from harness.traffic.fit import Piece
from harness.traffic.fresh import fresh_recording
from harness.traffic.recording import Recording

__all__ = [
    "RecordedSession",
    "arrival_instants",
    "arrival_times",
    "merged",
    "poisson_instants",
    "poisson_times",
    "recorded_sessions",
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
    piece's start with its rate; one generator walks every piece.
    """
    expovariate = rng.expovariate
    for rate_per_hour, start, end in pieces:
        if rate_per_hour <= 0:
            continue
        rate = rate_per_hour / HOUR
        t = start + expovariate(rate)
        while t < end:
            yield t
            t += expovariate(rate)


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
        rate = arrival.rate_per_hour
        days = arrival.estimated_from_days
        if days is not None and end > arrival.start:  # this run's rate, from its posterior
            exposure = (end - arrival.start) * days
            rate = Piece(arrival.start, end, rate * exposure / HOUR, exposure).draw(rng) * HOUR
        return poisson_instants(rate, arrival.start, end, rng)
    if isinstance(arrival, Diurnal):
        return _diurnal(arrival, duration, epoch, rng)
    if isinstance(arrival, Burst):  # a flash crowd is drawn whole: its instants come unsorted
        times = sorted(arrival.at + rng.uniform(0.0, arrival.within) for _ in range(arrival.count))
        return iter([t for t in times if t < duration])
    if isinstance(arrival, Recorded):
        raise TypeError("a recorded arrival brings sessions, not instants: recorded_sessions")
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


@dataclass(frozen=True, slots=True)
class RecordedSession:
    """One recorded session as it arrives: its organization's label (``None``: drawn by
    weight), quality, surface and length (``None``: drawn from the scenario's)."""

    organization: str | None
    quality: str
    surface: str
    length: float | None


def recorded_sessions(
    arrival: Recorded, recording: Recording, duration: float, rng: random.Random
) -> Iterator[tuple[float, RecordedSession]]:
    """The sessions of ``recording`` as ``arrival`` plays them in ``[0, duration)``, in time
    order (ties: the recording's order, then the copy's): see ``Recorded`` for ``since``,
    ``demand``, ``speed``, ``shift`` and ``scale``. Every draw is made here, from ``rng``, in a
    fixed order: a fresh day's (``demand``), the copies' shifts, then one draw per session for
    the thinned copy."""
    if arrival.since is not None:
        recording = recording.since(pd.Timestamp(arrival.since))
    if arrival.demand not in (None, "exact"):
        step = HOUR if arrival.step is None else arrival.step
        recording = fresh_recording(recording, arrival.demand, rng, arrival.period, step)
    frame = recording.frame
    speed = arrival.speed
    times = (frame["offset_seconds"].to_numpy(dtype=float) / speed + arrival.shift).tolist()
    lengths = (frame["length_seconds"].to_numpy(dtype=float) / speed).tolist()
    labels = frame["organization"].tolist()
    qualities = frame["quality"].astype(str).tolist()
    surfaces = frame["surface"].astype(str).tolist()
    count = len(times)
    whole, fraction = divmod(arrival.scale, 1.0)
    copies = int(whole) + (1 if fraction > 1e-12 else 0)
    gap = recording.span / speed / count if count else 0.0
    shifts = [0.0] + [rng.uniform(0.0, gap) for _ in range(copies - 1)]
    keep = [rng.random() < fraction for _ in range(count)] if copies > whole else None
    fixed = arrival.organization

    def copy(index: int) -> Iterator[tuple[float, RecordedSession]]:
        thinned = keep if index == copies - 1 and keep is not None else None
        delta = shifts[index]
        for row in range(count):
            at = times[row] + delta
            if thinned is not None and not thinned[row]:
                continue
            if at < 0.0 or at >= duration:
                continue
            label = labels[row]
            length = lengths[row]
            yield (
                at,
                RecordedSession(
                    fixed if fixed is not None else (None if _missing(label) else str(label)),
                    qualities[row],
                    surfaces[row],
                    None if math.isnan(length) else length,
                ),
            )

    if copies == 1:
        return copy(0)
    return heapq.merge(*(copy(i) for i in range(copies)), key=itemgetter(0))


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))
