"""Counting scheduled SimPy events, the yardstick of the cost rule.

Simulated cost must not grow with simulated duration. The honest measure is every event pushed
onto the environment's heap, whoever pushed it, so the counter wraps ``Environment.schedule`` on
the one environment instead of trusting each module to count its own timers. Installing twice on
the same environment reuses the first counter.
"""

from __future__ import annotations

import simpy
from simpy.events import NORMAL, EventPriority

__all__ = ["ScheduleCounter"]

_ATTRIBUTE = "_avatar_sim_schedule_counter"


class ScheduleCounter:
    """How many events have been scheduled on ``env`` since installation."""

    def __init__(self, env: simpy.Environment) -> None:
        self.count = 0
        original = env.schedule

        def counting(
            event: simpy.Event, priority: EventPriority = NORMAL, delay: float = 0
        ) -> None:
            self.count += 1
            original(event, priority, delay)

        env.schedule = counting  # type: ignore[method-assign]

    @classmethod
    def install(cls, env: simpy.Environment) -> ScheduleCounter:
        existing = getattr(env, _ATTRIBUTE, None)
        if isinstance(existing, ScheduleCounter):
            return existing
        counter = cls(env)
        setattr(env, _ATTRIBUTE, counter)
        return counter
