"""A scenario's scheduled faults as one SimPy process on the platform's clock (SIM-9).

Why one process for all of them: faults are few and known in advance, so they are sorted once
and applied at their instants, costing one event each. A capacity loss uses the same control as
the admin endpoint ``POST /_sim/faults/capacity``; the pool keeps busy workers until their
session ends, so queued jobs wait and, past the start-up timeout, fail ``no_capacity``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

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


def _apply(
    env: simpy.Environment, platform: Platform, timeline: list[tuple[float, int]]
) -> Generator[simpy.Event, Any, None]:
    for at, workers in timeline:
        if at > env.now:
            yield env.timeout(at - env.now)
        platform.admin.set_capacity(workers)


def start_faults(platform: Platform, faults: tuple[CapacityLoss, ...]) -> None:
    """Schedule ``faults`` on ``platform``'s clock (nothing when there are none)."""
    if faults:
        timeline = fault_timeline(faults, platform.config.scheduler.workers)
        platform.clock.env.process(_apply(platform.clock.env, platform, timeline))
