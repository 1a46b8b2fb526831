"""How often the cycle collector runs while a command simulates and collects: rarely.

Both phases of a run allocate millions of containers that die young by reference counting and
almost never form cycles: simulating (tuples, dicts, SimPy events) and collecting the tables
(slices, lists, Arrow wrappers). At CPython's default threshold the collector wakes every few
hundred allocations and, every hundred of those, walks every object the run holds, for nothing
collected. The threshold is the process's, so it is chosen by whoever owns the process: the
command line (``avatar-sim run``, ``demo``, ``sweep``) and the benchmarks, never a library
function (``run_scenario``, ``collect``, a sweep's tasks leave it as they found it, which a
save-and-restore could not promise under a threaded Dask worker).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_COLLECTION_THRESHOLD", "collect_rarely", "rare_collections"]

#: How many container allocations the cycle collector lets pass before it looks at the young
#: ones (CPython's default: 700).
YOUNG_COLLECTION_THRESHOLD = 50_000


def collect_rarely() -> None:
    """Raise the young generation's threshold for the rest of this process: for a process the
    caller owns from start to end (a sweep's worker, started by the command line)."""
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])


@contextmanager
def rare_collections() -> Iterator[None]:
    """Let the cycle collector look at young objects every ``YOUNG_COLLECTION_THRESHOLD``
    allocations within the block, as before afterwards (also if it raises): for the caller
    that owns the process (a command, a benchmark).

    The threshold changes only when cycles are freed, never what a run does or what its tables
    hold (nothing in ``sim/`` or the harness depends on when garbage goes)."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
