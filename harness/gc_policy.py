"""How often the cycle collector runs while the harness builds a run: rarely (``rare_collections``).

Both phases of a run allocate millions of containers that die young by reference counting and
almost never form cycles: simulating (tuples, dicts, SimPy events) and collecting the tables
(slices, lists of texts, Arrow wrappers). At CPython's default threshold the collector wakes
every few hundred allocations and, every hundred of those, walks every object the run holds (a
100,000-session month at ``records: full``: one such full pass in collect cost 0.08 s, for
nothing collected). The threshold is the process's own: it is raised only inside the block and
restored afterwards, also on error, so nothing changes for the caller's code.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_COLLECTION_THRESHOLD", "rare_collections"]

#: How many container allocations the cycle collector lets pass before it looks at the young
#: ones inside ``rare_collections`` (CPython's default: 700).
YOUNG_COLLECTION_THRESHOLD = 50_000


@contextmanager
def rare_collections() -> Iterator[None]:
    """Let the cycle collector look at young objects every ``YOUNG_COLLECTION_THRESHOLD``
    allocations within the block, as before afterwards (also if it raises).

    The threshold changes only when cycles are freed, never what a run does or what its tables
    hold (nothing in ``sim/`` or the harness depends on when garbage goes)."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
