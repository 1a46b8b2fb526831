"""A scenario's planned pool sizes and scheduled faults as timers on the platform's clock (SIM-9).

Why one timeline for all of them: changes of the pool's size are few and known in advance, so
they are merged once and applied at their instants (``Clock.follow``), costing one event each.
Both use the control of the admin endpoint ``POST /_sim/faults/capacity``; the pool keeps busy
workers until their session ends, so after a loss queued jobs wait and, past the start-up
timeout, fail ``no_capacity``.

The size at any moment: while a capacity fault lasts, the fault's (the one that began last, when
they overlap); otherwise the planned size (``pool_schedule``), or the configured workers before
the first planned change.
"""

from __future__ import annotations

import bisect

from harness.scenarios.parts import CapacityLoss, PoolChange
from sim.platform import Platform

__all__ = ["pool_timeline", "start_faults"]


def pool_timeline(
    faults: tuple[CapacityLoss, ...], workers: int, schedule: tuple[PoolChange, ...] = ()
) -> list[tuple[float, int]]:
    """Every change of the pool's size as (instant, workers), in time order."""
    instants = sorted(
        {change.at for change in schedule}
        | {fault.at for fault in faults}
        | {fault.until for fault in faults if fault.until is not None}
    )
    planned_at = [change.at for change in schedule]
    timeline: list[tuple[float, int]] = []
    for instant in instants:
        active = [
            (fault.at, index, fault.workers)
            for index, fault in enumerate(faults)
            if fault.at <= instant and (fault.until is None or instant < fault.until)
        ]
        if active:
            size = max(active)[2]
        else:
            planned = bisect.bisect_right(planned_at, instant)
            size = schedule[planned - 1].workers if planned else workers
        if not timeline or timeline[-1][1] != size:
            timeline.append((instant, size))
    return timeline


def start_faults(
    platform: Platform, faults: tuple[CapacityLoss, ...], schedule: tuple[PoolChange, ...] = ()
) -> None:
    """Schedule ``faults`` and the planned ``schedule`` on ``platform``'s clock (nothing when
    there are none)."""
    timeline = pool_timeline(faults, platform.config.scheduler.workers, schedule)
    if timeline:
        platform.clock.follow(timeline, platform.admin.set_capacity)
