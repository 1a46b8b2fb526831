"""A calendar of timed actions, fired in time order against the service's clock.

Nothing in the service runs on its own thread. Instead, every request first advances the
timeline to "now": each due action runs with its own scheduled time, in order, so a session's
status is exactly what it would have been had a worker fired each timer on the dot, whether or
not anybody was watching. The same rule makes the service deterministic under a manual clock.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True)
class Timer:
    at: float
    seq: int
    action: Callable[[float], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Timeline:
    def __init__(self) -> None:
        self._heap: list[Timer] = []
        self._seq = itertools.count()
        self.now = 0.0

    def schedule(self, at: float, action: Callable[[float], None]) -> Timer:
        """Run ``action(at)`` once the timeline reaches ``at`` (never before the present)."""
        timer = Timer(max(at, self.now), next(self._seq), action)
        heapq.heappush(self._heap, timer)
        return timer

    def advance(self, now: float) -> None:
        """Fire every due action in time order; actions may schedule further ones."""
        while self._heap and self._heap[0].at <= now:
            timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self.now = timer.at
            timer.action(timer.at)
        self.now = max(self.now, now)
