"""Counting scheduled SimPy events, the yardstick of the cost rule.

Simulated cost must not grow with simulated duration. The honest measure is every event pushed
onto the environment's heap, whoever pushed it. SimPy numbers every scheduled event from one
counter (``Environment._eid``, an ``itertools.count``), so the count is read from it instead of
wrapping ``schedule`` with a function call on every event: reading it costs nothing on the hot
path. The counter's ``repr`` is ``count(N)``, N being the next number to hand out.
"""

from __future__ import annotations

import simpy

__all__ = ["scheduled_events"]


def scheduled_events(env: simpy.Environment) -> int:
    """How many events have been scheduled on ``env`` since it was created."""
    counter = repr(env._eid)  # "count(N)"
    return int(counter[counter.index("(") + 1 : -1])
