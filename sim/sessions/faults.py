"""Injectable faults of the realtime fleet (SIM-9).

The faults themselves act through the scheduler and the session runtime (a worker crash, a
capacity change, lost heartbeats); this module holds the one fault that is a standing condition
rather than an instant action, slow start-up, and the bookkeeping the status endpoint reads to
say "degraded". Extra boot time is drawn from its own ``faults`` random stream so that injecting
a fault never shifts the latencies of the other streams.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from sim.config import Constant, Distribution
from sim.rng import sample

__all__ = ["FaultState", "SlowStartup"]


@dataclass(frozen=True, slots=True)
class SlowStartup:
    extra: Distribution  # seconds added to each worker boot
    until: float | None  # simulated seconds; None: until cleared


class FaultState:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self.slow: SlowStartup | None = None
        self.crashes = 0

    def slow_startup(self, extra: float | Distribution, until: float | None) -> SlowStartup:
        dist: Distribution = Constant(value=extra) if isinstance(extra, int | float) else extra
        self.slow = SlowStartup(extra=dist, until=until)
        return self.slow

    def clear_slow_startup(self) -> None:
        self.slow = None

    def slow_active(self, now: float) -> bool:
        return self.slow is not None and (self.slow.until is None or now < self.slow.until)

    def extra_boot(self, now: float) -> float:
        """Extra seconds for a worker boot that starts at ``now`` (0 without the fault)."""
        if self.slow is None or not self.slow_active(now):
            return 0.0
        return sample(self.slow.extra, self._rng)
