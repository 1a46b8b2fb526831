"""Sliding-window rate limits per API key on the virtual clock (LIM-3, LIM-4, GAP-LIM-1).

A limiter remembers the times of the requests it admitted in the last ``window`` seconds. A
request is admitted while fewer than ``limit`` are remembered; a refused request is not counted.
The snapshot it returns is exactly what the ``X-RateLimit-*`` and ``Retry-After`` headers show.
Memory per key is bounded by ``limit`` entries.
"""

from __future__ import annotations

import math
from collections import deque

from sim.clock import Clock
from sim.errors import RateLimited, RateSnapshot

__all__ = ["RateLimiter"]


class RateLimiter:
    def __init__(self, clock: Clock, name: str, limit: int, window_seconds: float) -> None:
        self._clock = clock
        self.name = name
        self.limit = limit
        self.window = window_seconds
        self._admitted: dict[str, deque[float]] = {}

    def _live(self, key: str) -> deque[float]:
        times = self._admitted.setdefault(key, deque())
        horizon = self._clock.now - self.window
        while times and times[0] <= horizon:
            times.popleft()
        return times

    def peek(self, key: str) -> RateSnapshot:
        times = self._live(key)
        return self._snapshot(times)

    def _snapshot(self, times: deque[float]) -> RateSnapshot:
        reset_at = (times[0] + self.window) if times else self._clock.now
        return RateSnapshot(
            limit=self.limit, remaining=max(self.limit - len(times), 0), reset_at=reset_at
        )

    def hit(self, key: str) -> RateSnapshot:
        """Admit one request for ``key`` or raise ``RateLimited`` with the retry delay."""
        times = self._live(key)
        if len(times) >= self.limit:
            snapshot = self._snapshot(times)
            retry_after = max(math.ceil(snapshot.reset_at - self._clock.now), 1)
            raise RateLimited(
                "rate_limited",
                f"Too many requests: {self.limit} per {self.window:g} s for {self.name}.",
                retry_after=retry_after,
                rate=snapshot,
            )
        times.append(self._clock.now)
        return self._snapshot(times)
