"""The machine the month's time goals were set on, and this machine measured against it.

Why: the month's goals are wall seconds, and a wall time belongs to a machine. Machines of the
same kind differ by up to three times (two 2-core VMs that both call their processor "AMD EPYC"
ran the yardstick below at a third and at two thirds of the reference's rate; each report in
``bench/results/`` names its machine and its yardstick). The project's rule for speed goals is a
ratio against a baseline measured in the same run, so the month's goal is judged that way too:

- the yardstick is bare SimPy serving the same queue as ``bench_sessions``' baseline, timed in
  wall seconds (as the goals are), as the median of several short runs taken between the months;
- a month's wall time here, times (yardstick here / yardstick of the reference machine), is the
  time it would have taken on the reference machine, and that is what meets its goal or not.

The scaling is only as good as the month's cost tracks bare SimPy's, and it does so only
roughly: part of a month is memory traffic and compiled code (numpy, Arrow) that a faster
interpreter loop does not speed up, so another machine or another build of the interpreter moves
the month less than the yardstick (measured in commit 9357f6c, which set
``SCALING_UNCERTAINTY``). A scaled figure carries about ±20 %, and a goal is judged met only when
the scaled time is within it by that margin. The report keeps the wall time measured here beside
the scaled one, and whether it met the goal unscaled.
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
