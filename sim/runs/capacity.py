"""The pool of run slots and the wait for capacity (GAP-RUN-1, GAP-RUN-9).

``config.runs.run_workers`` runs execute at once. A run that finds every slot taken waits in FIFO
order with a ``capacity_wait`` deadline ``capacity_wait_seconds`` ahead; it fails with
``capacity_timeout`` when the deadline passes first.

A run queued inside a create joins the line at once (a failed create takes it out again,
``undo_admit``), but the watcher is started through ``defer`` (the journal's), so a failed create
starts no process (``sim.journal``).

Cost: one watcher process serves every waiting run. Since all waits have the same length, FIFO
order is deadline order, so the watcher only ever sleeps until the head's deadline; a run that
leaves the queue early costs at most one spurious wake-up, never a timer per second.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from sim.clock import Clock
from sim.runs.records import Run

__all__ = ["RunSlots"]


class RunSlots:
    def __init__(
        self,
        clock: Clock,
        *,
        slots: int,
        wait_seconds: float,
        on_dispatch: Callable[[Run], None],
        on_expire: Callable[[Run], None],
        defer: Callable[[Callable[[], object]], None],
    ) -> None:
        self._clock = clock
        self._free = slots
        self._wait_seconds = wait_seconds
        self._on_dispatch = on_dispatch
        self._on_expire = on_expire
        self._defer = defer
        self._waiting: dict[str, Run] = {}  # insertion order = FIFO = deadline order
        self._watcher: simpy.Process | None = None

    @property
    def free(self) -> int:
        return self._free

    @property
    def waiting(self) -> list[Run]:
        return list(self._waiting.values())

    def admit(self, run: Run) -> bool:
        """Give ``run`` a slot now (``True``) or queue it with a deadline (``False``)."""
        if self._free > 0 and not self._waiting:
            self._take(run)
            return True
        run.capacity_deadline = self._clock.now + self._wait_seconds
        self._waiting[run.id] = run
        if self._watcher is None:
            self._defer(self._start_watcher)
        return False

    def _start_watcher(self) -> None:
        if self._watcher is None and self._waiting:
            self._watcher = self._clock.env.process(self._watch())

    def undo_admit(self, run: Run) -> None:
        """Reverse ``admit`` for a run whose create failed: its slot, or its place in line."""
        if run.holds_slot:
            run.holds_slot = False
            self._free += 1  # nobody was waiting when it took the slot, so nobody is owed it
        self.withdraw(run)

    def withdraw(self, run: Run) -> None:
        """Take a waiting run out of the queue (it was canceled)."""
        if self._waiting.pop(run.id, None) is not None:
            run.capacity_deadline = None

    def release(self, run: Run) -> None:
        """``run`` gives its slot back; the longest-waiting run gets it."""
        if not run.holds_slot:
            return
        run.holds_slot = False
        self._free += 1
        if self._waiting:
            head = next(iter(self._waiting))
            self._take(self._waiting.pop(head))

    def _take(self, run: Run) -> None:
        self._free -= 1
        run.holds_slot = True
        run.capacity_deadline = None
        self._on_dispatch(run)

    def _watch(self) -> Generator[simpy.Event, Any, None]:
        env = self._clock.env
        while self._waiting:
            head = next(iter(self._waiting.values()))
            deadline = head.capacity_deadline
            assert deadline is not None
            if deadline > self._clock.now:
                yield env.timeout(deadline - self._clock.now)
                continue
            del self._waiting[head.id]
            head.capacity_deadline = None
            self._on_expire(head)
        self._watcher = None
