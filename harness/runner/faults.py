"""A scenario's scheduled faults as timers on the platform's clock (SIM-9).

Why one timeline for all of them: faults are few and known in advance, so they are sorted once
and applied at their instants (``Clock.follow``), costing one event each. A capacity loss uses the
same control as the admin endpoint ``POST /_sim/faults/capacity``; the pool keeps busy workers
until their session ends, so queued jobs wait and, past the start-up timeout, fail
``no_capacity``.
"""

from __future__ import annotations

from harness.scenarios.model import CapacityLoss
from sim.platform import Platform

__all__ = ["fault_timeline", "start_faults"]


def fault_timeline(faults: tuple[CapacityLoss, ...], workers: int) -> list[tuple[float, int]]:
    """Every change of pool size as (instant, workers), in time order (ties: file order)."""
    changes: list[tuple[float, int, int]] = []
    for index, fault in enumerate(faults):
        changes.append((fault.at, index, fault.workers))
        if fault.until is not None:
            changes.append((fault.until, index, workers))
    return [(at, size) for at, _index, size in sorted(changes, key=lambda c: (c[0], c[1]))]


def start_faults(platform: Platform, faults: tuple[CapacityLoss, ...]) -> None:
    """Schedule ``faults`` on ``platform``'s clock (nothing when there are none)."""
    if faults:
        timeline = fault_timeline(faults, platform.config.scheduler.workers)
        platform.clock.follow(timeline, platform.admin.set_capacity)
