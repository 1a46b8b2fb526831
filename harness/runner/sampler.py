"""The pool as the runner samples it: a reading on a fixed grid, exported as a table.

Why a sampler of its own: the pool's counts are a snapshot and its meter a running total, so one
reading at each sampling instant (``sample_every``) and one more at the end of the run give each
interval's snapshot at its start and what the meter says of the whole interval: the most busy
workers and waiting jobs at any instant, the worker-seconds busy and in the pool. Its cost grows
with the readings, not the sessions.
"""

from __future__ import annotations

from array import array

from sim.columns import Column, Table
from sim.sessions.service import SessionService

__all__ = ["COUNTS", "PoolSampler"]

#: The pool's counts a reading keeps (``sim.sessions.scheduler.PoolStatus``), in this order.
COUNTS: tuple[str, ...] = ("capacity", "workers", "idle", "busy", "restarting", "queued")


class PoolSampler:
    """Readings of one platform's pool: ``sample`` at each sampling instant, ``close`` once at
    the end of the run."""

    def __init__(self, sessions: SessionService) -> None:
        self._status = sessions.pool_status
        self._meter = sessions.pool_meter
        self.at = array("d")
        self.counts: dict[str, array[int]] = {name: array("q") for name in COUNTS}
        # The meter at each reading (one more than the samples once closed).
        self._busy_seconds = array("d")
        self._worker_seconds = array("d")
        self._busy_peak = array("q")
        self._waiting_peak = array("q")

    def sample(self, _tag: object = None) -> None:
        """Read the pool as it is now and its meter (the interval that ends here)."""
        status = self._status()
        self.at.append(status.at)
        for name, column in self.counts.items():
            column.append(getattr(status, name))
        self._read_meter()

    def close(self) -> None:
        """Read the meter once more: the last interval runs to the end of the run."""
        self._read_meter()

    def _read_meter(self) -> None:
        meter = self._meter()
        self._busy_seconds.append(meter.busy_seconds)
        self._worker_seconds.append(meter.worker_seconds)
        self._busy_peak.append(meter.busy_peak)
        self._waiting_peak.append(meter.waiting_peak)

    def __len__(self) -> int:
        return len(self.at)

    def export(self) -> Table:
        """One row per sample, the interval from it to the next (or to the end): ``at``
        (time); each of ``COUNTS`` as sampled then (ints); what the meter read at the
        interval's end says of it: ``busy_max`` and ``queued_max`` (its peaks; ints),
        ``busy_seconds`` and ``worker_seconds`` (worker-seconds spent in it; floats)."""
        rows = len(self.at)
        busy, present = self._busy_seconds, self._worker_seconds
        return Table(
            rows,
            {
                "at": Column("time", self.at),
                **{name: Column("int", column) for name, column in self.counts.items()},
                "busy_max": Column("int", self._busy_peak[1 : rows + 1]),
                "queued_max": Column("int", self._waiting_peak[1 : rows + 1]),
                "busy_seconds": Column("float", [busy[i + 1] - busy[i] for i in range(rows)]),
                "worker_seconds": Column(
                    "float", [present[i + 1] - present[i] for i in range(rows)]
                ),
            },
        )
