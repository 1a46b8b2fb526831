"""The worker pool read on a fixed grid of simulated time, for watching a running simulator.

Why it exists: the pool keeps its counts as they are now and its meter (``Scheduler.meter``),
never its past. A watcher that polled the pool would see only the instants it asked at, and a
clock advanced by an hour in one call would show as a single step. This sampler is a follower on
the simulated clock: it reads the pool at every instant of its grid that the clock passes,
however the clock gets there (the wall-clock driver, an admin advance, a test).

It reads ``pool_status`` only, never the meter (whose peaks restart at each reading and belong to
one reader), draws nothing at random and changes nothing, so the service behaves the same with or
without it. It keeps the newest ``keep`` readings, so a month served costs what an hour does.
Nothing starts it by default: a scenario run has its own sampler (``harness.runner``); served
mode starts this one (``PlatformAdmin.sample_pool``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from itertools import count

from sim.clock import Clock
from sim.sessions.scheduler import PoolStatus

__all__ = ["PoolSamples"]


class PoolSamples:
    """Reads the pool every ``every`` simulated seconds from now on; keeps the newest ``keep``."""

    def __init__(
        self, clock: Clock, read: Callable[[], PoolStatus], *, every: float, keep: int
    ) -> None:
        if not every > 0 or keep < 1:
            raise ValueError("sample every positive number of seconds and keep at least one")
        self.every = every
        self._samples: deque[PoolStatus] = deque(maxlen=keep)
        start, horizon = clock.now, clock.horizon

        def grid() -> Iterator[tuple[float, None]]:
            for index in count(1):
                at = start + index * every
                if at > horizon:
                    return
                yield at, None

        self._samples.append(read())  # the pool as it is when the sampling starts
        clock.follow(grid(), lambda _: self._samples.append(read()))

    def samples(self) -> list[PoolStatus]:
        """The readings kept, oldest first."""
        return list(self._samples)
