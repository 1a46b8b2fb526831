"""The two start-up waits, their histogram and their percentiles: one definition for every level.

A customer waits twice before its avatar speaks, and the two are told apart everywhere:

- the **placement wait**, created → placed (``started_at``): queueing for a free worker, what
  Erlang C predicts and what the start-up timeout cuts short (``no_capacity``);
- the **first-frame wait**, created → first frame (``first_frame_at``): the placement wait plus
  the worker's boot and the first frame's latency, what the customer sees.

Why percentiles come from a histogram at every records level: a ``records: summary`` run keeps no
per-session rows, only counts per interval, wait kind and bin (the ``waits`` table). A
percentile read from those counts is the **upper edge of the bin that holds it** (bins of
0.1 s up to 10 s, 0.25 s up to 30 s, then coarser: ``WAIT_EDGES``), so it is never below the
exact one and at most one bin above it. A run that kept every row computes it the same way, so
``p95_placement_wait_seconds`` is one number whatever a run kept, and a window of intervals sums
their counts. The same counts say exactly how many waits exceeded a threshold on the edges, which
is how a plan judges a percentile objective (``share_above``).

Bins are closed on the right: ``(low, high]``, except the first, which holds the waits of zero
(within a nanosecond: a job placed at the instant it was created did not wait).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "NO_WAIT",
    "WAIT_EDGES",
    "WAIT_KINDS",
    "bin_of",
    "histogram",
    "quantile",
    "resolution_at",
    "share_above",
]

#: A wait at most this long is no wait (the job was placed at the instant it was created).
NO_WAIT = 1e-9


def _edges() -> tuple[float, ...]:
    edges = [0.0]
    edges += [round(i * 0.1, 10) for i in range(1, 101)]  # to 10 s by 0.1 s
    edges += [10.0 + i * 0.25 for i in range(1, 81)]  # to 30 s by 0.25 s
    edges += [30.0 + i for i in range(1, 91)]  # to 120 s by 1 s
    edges += [120.0 + i * 10 for i in range(1, 49)]  # to 600 s by 10 s
    edges += [600.0 + i * 60 for i in range(1, 51)]  # to 3600 s by 60 s
    return (*edges, math.inf)


#: Upper edges of the bins (seconds): bin 0 holds the waits of zero, bin ``i`` the waits in
#: ``(WAIT_EDGES[i - 1], WAIT_EDGES[i]]``.
WAIT_EDGES: tuple[float, ...] = _edges()
#: The waits, as the ``kind`` column of the ``waits`` table names them.
WAIT_KINDS: tuple[str, ...] = ("placement", "first_frame")


def bin_of(waits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The bin of each wait (seconds; a wait of at most ``NO_WAIT`` is bin 0)."""
    clean = np.where(waits > NO_WAIT, waits, 0.0)
    bins: np.ndarray[Any, Any] = np.searchsorted(np.asarray(WAIT_EDGES), clean, side="left")
    return bins


def histogram(waits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Counts of ``waits`` per bin (one count per edge of ``WAIT_EDGES``)."""
    counts: np.ndarray[Any, Any] = np.bincount(bin_of(waits), minlength=len(WAIT_EDGES))
    return counts


def quantile(counts: Sequence[int] | np.ndarray[Any, Any], q: float) -> float:
    """The ``q``-quantile of the waits counted in ``counts``: the upper edge of the first bin by
    which at least ``q`` of them are counted (NaN without waits)."""
    cumulative = np.cumsum(np.asarray(counts, dtype=np.int64))
    total = int(cumulative[-1]) if len(cumulative) else 0
    if total == 0:
        return math.nan
    needed = math.ceil(q * total - 1e-9)
    index = int(np.searchsorted(cumulative, max(needed, 1), side="left"))
    return WAIT_EDGES[index]


def share_above(counts: Sequence[int] | np.ndarray[Any, Any], threshold: float) -> tuple[int, int]:
    """How many of the waits counted exceed ``threshold`` seconds, and how many there are.

    Exact when ``threshold`` is an edge of ``WAIT_EDGES``; otherwise the waits of the bin that
    holds it count as above (never fewer than the exact number): ``quantile(counts, q) <=
    threshold`` exactly when no more than ``1 - q`` of them are above."""
    values = np.asarray(counts, dtype=np.int64)
    total = int(values.sum())
    below = bisect.bisect_right(WAIT_EDGES, threshold)  # bins 0..below-1 have high <= threshold
    return int(values[below:].sum()), total


def resolution_at(threshold: float) -> float:
    """The width of the bin holding ``threshold`` (how finely a percentile is known there)."""
    index = bisect.bisect_left(WAIT_EDGES, threshold)
    if index == 0:
        return 0.0
    return WAIT_EDGES[min(index, len(WAIT_EDGES) - 1)] - WAIT_EDGES[index - 1]
