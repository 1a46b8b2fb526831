"""The machine the month's time goals were set on, and this machine measured against it.

Why: the month's goals are wall seconds (the 100k month within 12 s, the 1M month within
120 s), and a wall time belongs to a machine. Machines here differ by up to three times: bare
SimPy serving ``bench_sessions``' queue ran about 73,000 customers a second on the machine the
goals were set on (20,000 customers, measured when the goals were set; 6,000 or 20,000 give the
same rate within 1 %), 47,200 on the machine of 2026-11-24 and 21,000 to 24,000 on the machine of
2026-11-26, two 2-core VMs that both call their processor "AMD EPYC". The project's rule for
speed goals is a ratio against a baseline measured in the same run, so the month's goal is
judged that way too:

- the yardstick is bare SimPy serving the same queue as ``bench_sessions``' baseline, timed in
  wall seconds (as the goals are), as the median of several short runs taken between the months;
- a month's wall time here, times (yardstick here / yardstick of the reference machine), is the
  time it would have taken on the reference machine, and that is what meets its goal or not.

The scaling is only as good as the month's cost tracks bare SimPy's, and it does so only
roughly: part of a month is memory traffic and compiled code (numpy, Arrow) that a faster
interpreter loop does not speed up.

- Across machines: the tree of 2026-11-24 (687b22a) ran the 100k ``full`` month in 13.4 s on that
  day's machine and in 20.8 s on 2026-11-26's; scaled, those are 8.7 s and 7.0 s.
- Across interpreter builds, on one machine (2026-11-26): Debian's optimized CPython 3.11 ran the
  yardstick 46 % faster than pyenv's plain build but the month only 17 % faster, so its scaled
  month came out at 8.1 s against 6.7 s.

So a scaled figure carries about ±20 % (``SCALING_UNCERTAINTY``), and a goal is judged met only
when the scaled time is within it by that margin. The report keeps the wall time measured here
beside the scaled one, and whether it met the goal unscaled.
"""

from __future__ import annotations

import statistics
import time

from bench.bench_sessions import baseline_queue

__all__ = ["REFERENCE_CUSTOMERS_PER_SECOND", "SCALING_UNCERTAINTY", "on_reference", "yardstick"]

#: Bare SimPy on ``bench_sessions``' queue, customers per wall second, on the machine the month's
#: goals were set on: the rate measured there beside the goals, when they were set.
REFERENCE_CUSTOMERS_PER_SECOND = 73_000.0
#: How far a scaled time may be off (above): a goal is met on the reference machine only if the
#: scaled time is within it by this margin.
SCALING_UNCERTAINTY = 0.2


def yardstick(runs: int = 3, customers: int = 6_000, *, seed: int = 0) -> list[float]:
    """Customers per wall second of bare SimPy on the baseline queue, one figure per run."""
    if runs < 1 or customers < 1:
        raise ValueError("the yardstick needs at least one run of at least one customer")
    return [
        customers / baseline_queue(customers, seed=seed + run, clock=time.perf_counter)
        for run in range(runs)
    ]


def on_reference(seconds: float, samples: list[float]) -> float:
    """``seconds`` measured here, as they would be on the reference machine: scaled by how fast
    this machine ran the yardstick (the median of ``samples``) against the reference's rate."""
    if not samples or min(samples) <= 0:
        raise ValueError("the yardstick needs positive samples to scale a time")
    return seconds * statistics.median(samples) / REFERENCE_CUSTOMERS_PER_SECOND
