"""The irreversible content purge behind ``DELETE /v1/runs/{id}`` (RUN-DEL-1, GAP-RUN-7).

A deletion request tombstones the run at once (the service does that) and queues a purge here.
Purges run one at a time in FIFO order, each taking ``config.runs.purge_time``: storage is a
shared, slow resource, which is what gives ``max_pending_purges`` (the 429 ``purge_queue_full``
bound) its meaning. Statuses follow ``DELETION_TRANSITIONS``: ``pending`` → ``purging`` →
``completed`` | ``failed``. A storage failure is a fault injected by scenarios or the admin API.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy

from sim.errors import RateLimited
from sim.kernel import Kernel
from sim.rng import sample
from sim.runs.lifecycle import next_deletion_status
from sim.runs.records import RunDeletion

__all__ = ["PURGE_FAILED_MESSAGE", "PurgeQueue", "retained_message"]

PURGE_FAILED_MESSAGE = "storage purge failed"


def retained_message(retained: int) -> str:
    noun = "asset was" if retained == 1 else "assets were"
    return (
        f"deletion completed, but {retained} input {noun} retained because "
        "they cannot be told apart from library uploads"
    )


class PurgeQueue:
    def __init__(self, kernel: Kernel, purge: Callable[[RunDeletion], int]) -> None:
        """``purge`` deletes a run's own assets and returns how many input assets it kept."""
        self._kernel = kernel
        self._purge = purge
        self._queue: deque[RunDeletion] = deque()
        self._current: RunDeletion | None = None
        self._current_ends_at = 0.0
        self._worker: simpy.Process | None = None
        self._failing = False
        self._fail_next: list[str | None] = []  # one-shot faults: org id, or None for any

    # -- faults (SIM-9) -------------------------------------------------------------------------

    def set_failure(self, enabled: bool) -> None:
        """Every purge fails while enabled."""
        self._failing = enabled

    @property
    def failing(self) -> bool:
        """Whether every purge fails (``set_failure``), for whoever shows the active faults."""
        return self._failing

    def fail_next(self, org_id: str | None = None) -> None:
        """The next purge (of ``org_id``, or of anyone) fails."""
        self._fail_next.append(org_id)

    def _should_fail(self, deletion: RunDeletion) -> bool:
        if self._failing:
            return True
        for index, org_id in enumerate(self._fail_next):
            if org_id is None or org_id == deletion.org_id:
                del self._fail_next[index]
                return True
        return False

    # -- queue ----------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Deletions not finished yet (waiting plus the one purging)."""
        return len(self._queue) + (1 if self._current is not None else 0)

    def check_capacity(self) -> None:
        """429 ``purge_queue_full`` when ``max_pending_purges`` are already queued."""
        if self.pending < self._kernel.config.runs.max_pending_purges:
            return
        wait = self._current_ends_at - self._kernel.clock.now if self._current else 0.0
        raise RateLimited(
            "purge_queue_full",
            "Too many run deletions are pending; retry later.",
            retry_after=max(1, math.ceil(wait)),
        )

    def enqueue(self, deletion: RunDeletion) -> None:
        self._queue.append(deletion)
        if self._worker is None:
            self._worker = self._kernel.clock.env.process(self._work())

    def _work(self) -> Generator[simpy.Event, Any, None]:
        clock = self._kernel.clock
        rng = self._kernel.streams.stream("runs.purge")
        while self._queue:
            deletion = self._queue.popleft()
            self._current = deletion
            deletion.status = next_deletion_status(deletion.status, "begin_purge").target
            deletion.started_at = clock.now
            duration = sample(self._kernel.config.runs.purge_time, rng)
            self._current_ends_at = clock.now + duration
            yield clock.env.timeout(duration)
            if self._should_fail(deletion):
                deletion.status = next_deletion_status(deletion.status, "storage_failure").target
                deletion.error = PURGE_FAILED_MESSAGE
            else:
                retained = self._purge(deletion)
                deletion.retained_assets = retained
                deletion.status = next_deletion_status(deletion.status, "purged").target
                deletion.error = retained_message(retained) if retained else None
            deletion.completed_at = clock.now
            self._current = None
        self._worker = None
