"""``GET /v1/status``: the public health roll-up, from the fleet's point of view (GAP-PUB-1).

``major_outage`` when the pool has no worker that is up, ``degraded`` when capacity is below the
configuration, a worker is restarting or a fault is under way, ``operational`` otherwise.
"""

from __future__ import annotations

from typing import Any

from sim.clock import Clock
from sim.sessions.faults import FleetFaults
from sim.sessions.scheduler import PoolStatus

__all__ = ["fleet_status", "status_body"]


def fleet_status(pool: PoolStatus, configured_workers: int, faults: FleetFaults, now: float) -> str:
    if pool.idle + pool.busy == 0:
        return "major_outage"
    degraded = pool.capacity < configured_workers or pool.restarting > 0 or faults.active(now)
    return "degraded" if degraded else "operational"


def status_body(
    pool: PoolStatus, configured_workers: int, faults: FleetFaults, clock: Clock
) -> dict[str, Any]:
    status = fleet_status(pool, configured_workers, faults, clock.now)
    return {
        "object": "status",
        "status": status,
        "updated_at": clock.timestamp(),
        "components": [
            {"name": "api", "status": "operational"},
            {"name": "realtime_sessions", "status": status},
        ],
    }
