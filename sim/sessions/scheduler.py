"""The worker pool, its FIFO wait queue and admission control (SIM-3, GAP-LIM-3).

Why these shapes:

- Placement happens in a zero-delay event, not inside ``create``: the create answers ``queued``
  (SES-ST-1) and the job is placed when the clock next steps, at the same simulated instant.
  One pending dispatch serves any number of creates and frees.
- The start-up deadline is one shared timer for the whole queue, not one per job: the queue is
  FIFO and every job waits at most ``startup_timeout_seconds``, so the head always has the
  earliest deadline. A job placed in time never leaves a timer of its own behind.
- Capacity changes keep busy workers until their session ends (they *retire*), and remove idle
  workers first, so a capacity loss never kills a running session; queued jobs then time out.
  A worker the pool is asked to add joins ``provision_lead_seconds`` later (machines take time
  to provision); a shrink asked meanwhile cancels the newest asks first, as a cloud request
  that is not yet served can be withdrawn. With no lead time it joins at once.

- The pool keeps its idle, busy and restarting counts as it changes and its idle workers in a
  heap by creation order, so admission and placement cost the same with 8 workers or 8,000.
- The pool meters itself as it changes (``meter``): worker-seconds busy and in the pool, and the
  most busy workers and waiting jobs since the last reading. A sampler that only looked at the
  pool every few minutes would miss a short spike, and the mean of its snapshots is not the
  time average a utilization must be.

The scheduler knows nothing about sessions beyond their ids: the service gives it two callbacks,
``place`` (a worker took the job) and ``expire`` (the job waited too long), and ``defer`` (the
journal's). A queued job is the session's id and an opaque ``job`` value that the service hands
in and gets back in those callbacks (its working state: no lookup by id per placement). A job
enqueued inside a create joins the queue at once (a failed create withdraws it) but the timers
that dispatch and watch it are scheduled only once the create has succeeded, so a failed create
leaves nothing on the calendar (``sim.journal``). The dispatch and the watch are the clock's
``Timer`` entries (``Clock.after``).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Generic, Literal, TypeVar

from sim.clock import Clock, Timer
from sim.config import SchedulerConfig
from sim.errors import ServiceUnavailable

__all__ = ["PoolMeter", "PoolStatus", "Scheduler", "Worker", "WorkerStatus"]

WorkerStatus = Literal["idle", "busy", "restarting"]


@dataclass(slots=True)
class Worker:
    id: str
    order: int  # creation order: idle workers take jobs lowest first
    status: WorkerStatus = "idle"
    session_id: str | None = None
    retiring: bool = False  # leaves the pool when its current job (or restart) is done
    free_by: float | None = None  # latest moment the current job ends, when known
    back_at: float | None = None  # when a restarting worker returns


@dataclass(frozen=True, slots=True)
class PoolStatus:
    """A snapshot of the pool for collectors and the status endpoint."""

    at: float
    capacity: int  # workers the pool is meant to have (configured or set by a fault)
    workers: int  # workers currently in the pool, retiring ones included
    idle: int
    busy: int
    restarting: int
    queued: int


@dataclass(frozen=True, slots=True)
class PoolMeter:
    """The pool's running totals at ``at``, and its peaks since the previous reading.

    ``busy_seconds`` and ``worker_seconds`` are integrals since the start (worker-seconds spent
    busy, and spent in the pool: idle, busy or restarting, retiring ones included), so the
    difference of two readings is exactly what happened between them. ``busy_peak`` and
    ``waiting_peak`` are the most busy workers, and the most jobs waiting for a worker (queued
    beyond the idle workers about to take them), at any instant since the previous reading.
    """

    at: float
    busy_seconds: float
    worker_seconds: float
    busy_peak: int
    waiting_peak: int


#: What the service queues with a session's id and gets back when it is placed or expires.
Job = TypeVar("Job")


class Scheduler(Generic[Job]):
    def __init__(
        self,
        clock: Clock,
        config: SchedulerConfig,
        startup_timeout: float,
        *,
        place: Callable[[Job, Worker], None],
        expire: Callable[[Job], None],
        defer: Callable[[Callable[[], object]], None] | None = None,
    ) -> None:
        self._clock = clock
        self._config = config
        self._startup_timeout = startup_timeout
        self._place = place
        self._expire = expire
        self._defer = defer if defer is not None else _now
        self._workers: dict[str, Worker] = {}
        self._counts: Counter[WorkerStatus] = Counter()
        #: Idle workers' creation orders, a heap (stale entries skipped), and the workers by
        #: order (the order alone decides which idle worker goes first).
        self._idle: list[int] = []
        self._by_order: dict[int, Worker] = {}
        self._next_worker = 0
        #: Queued jobs: (session id, start-up deadline, job). A plain tuple: one per create.
        self._queue: deque[tuple[str, float, Job]] = deque()
        self._dispatch_pending = False
        self._watch_at: float | None = None
        #: Each kind of timer's callbacks, one shared list each (``Timer``).
        self._on_dispatch: list[Callable[[Timer], None]] = [self._dispatch]
        self._on_watch: list[Callable[[Timer], None]] = [self._watch]
        self.capacity = config.workers
        #: Workers asked for and not yet joined: each ask's remaining count, oldest first.
        self._asked: list[list[int]] = []
        #: The meter: integrals up to ``_metered_at`` and the peaks since the last reading.
        self._metered_at = clock.now
        self._busy_seconds = 0.0
        self._worker_seconds = 0.0
        self._busy_peak = 0
        self._waiting_peak = 0
        #: The wait queue's bound, for ``admit`` (every create asks); a fault may change it.
        self._queue_bound = 0 if config.admission_policy == "reject" else config.max_queue_length
        for _ in range(config.workers):
            self._add_worker()

    # -- views -----------------------------------------------------------------------------

    @property
    def queue_bound(self) -> int:
        """How many jobs may wait for a worker before a create is refused ``at_capacity``."""
        return self._queue_bound

    def set_queue_bound(self, jobs: int) -> None:
        """Change the wait queue's bound (a fault: jobs already waiting stay queued)."""
        if jobs < 0:
            raise ValueError("the queue's bound cannot be negative")
        self._queue_bound = jobs

    def workers(self) -> list[Worker]:
        return list(self._workers.values())

    def worker(self, worker_id: str) -> Worker:
        return self._workers[worker_id]

    def find(self, worker_id: str) -> Worker | None:
        return self._workers.get(worker_id)

    def queued(self) -> list[str]:
        return [waiting[0] for waiting in self._queue]

    def status(self) -> PoolStatus:
        counts = self._counts
        return PoolStatus(
            at=self._clock.now,
            capacity=self.capacity,
            workers=len(self._workers),
            idle=counts["idle"],
            busy=counts["busy"],
            restarting=counts["restarting"],
            queued=len(self._queue),
        )

    def meter(self) -> PoolMeter:
        """The running totals up to now and the peaks since the previous reading (which this
        reading ends: the next one's peaks start from the pool as it is now)."""
        self._accrue()
        reading = PoolMeter(
            at=self._clock.now,
            busy_seconds=self._busy_seconds,
            worker_seconds=self._worker_seconds,
            busy_peak=self._busy_peak,
            waiting_peak=self._waiting_peak,
        )
        self._busy_peak = self._counts["busy"]
        self._waiting_peak = max(len(self._queue) - self._counts["idle"], 0)
        return reading

    def _accrue(self) -> None:
        """Add the worker-seconds since the last change: called before every count changes."""
        now = self._clock.now
        elapsed = now - self._metered_at
        if elapsed > 0.0:
            counts = self._counts
            self._busy_seconds += counts["busy"] * elapsed
            self._worker_seconds += len(self._workers) * elapsed
            self._metered_at = now

    # -- admission and queueing ------------------------------------------------------------

    def admit(self) -> None:
        """Refuse with 503 ``at_capacity`` when no worker is free and the queue is full."""
        idle = self._counts["idle"]
        waiting = len(self._queue) - idle  # jobs that will really wait once dispatch runs
        if waiting < 0 or waiting < self._queue_bound:
            return
        raise ServiceUnavailable(
            "at_capacity",
            "No worker is free and the wait queue is full; retry later.",
            retry_after=self._retry_after(max(idle, 0)),
        )

    def _retry_after(self, skip: int) -> int:
        """Seconds until a slot frees at the latest, derived from the state (GAP-LIM-3)."""
        now = self._clock.now
        if len(self._queue) > skip:
            # The oldest job that is really waiting leaves the queue by its deadline.
            moment = self._queue[skip][1]
        else:
            known = [
                w.free_by
                for w in self._workers.values()
                if w.status == "busy" and w.free_by is not None
            ]
            known += [
                w.back_at
                for w in self._workers.values()
                if w.status == "restarting" and w.back_at is not None
            ]
            moment = min(known) if known else now + self._startup_timeout
        return max(1, math.ceil(moment - now - 1e-9))

    def enqueue(self, session_id: str, created_at: float, job: Job) -> None:
        queue = self._queue
        queue.append((session_id, created_at + self._startup_timeout, job))
        waiting = len(queue) - self._counts["idle"]
        if waiting > self._waiting_peak:
            self._waiting_peak = waiting
        self._defer(self._wake)

    def _wake(self) -> None:
        """Schedule the dispatch and the start-up watch the queue now needs (each is asked only
        when its own first check would not refuse at once: one create after another finds the
        watch armed for an earlier deadline)."""
        queue = self._queue
        if not queue:
            return
        if not self._dispatch_pending:
            self._request_dispatch()
        if self._watch_at is None or self._watch_at > queue[0][1]:
            self._arm_watch()

    def withdraw(self, session_id: str) -> bool:
        """Take a job out of the queue (it was canceled); ``False`` if it was not queued."""
        for waiting in self._queue:
            if waiting[0] == session_id:
                self._queue.remove(waiting)
                return True
        return False

    # -- workers ---------------------------------------------------------------------------

    def _add_worker(self) -> Worker:
        self._accrue()
        self._next_worker += 1
        worker = Worker(id=f"worker-{self._next_worker:04d}", order=self._next_worker)
        self._workers[worker.id] = worker
        self._by_order[worker.order] = worker
        self._counts["idle"] += 1
        heappush(self._idle, worker.order)
        return worker

    def _set(self, worker: Worker, status: WorkerStatus) -> None:
        """Change a worker's status, keeping the counts, the meter and the idle heap."""
        self._accrue()
        counts = self._counts
        counts[worker.status] -= 1
        counts[status] += 1
        worker.status = status
        if status == "idle":
            heappush(self._idle, worker.order)
        elif status == "busy" and counts["busy"] > self._busy_peak:
            self._busy_peak = counts["busy"]

    def _remove(self, worker: Worker) -> None:
        self._accrue()
        self._counts[worker.status] -= 1
        del self._workers[worker.id]
        del self._by_order[worker.order]

    def _active(self) -> list[Worker]:
        return [w for w in self._workers.values() if not w.retiring]

    def release(self, worker_id: str, session_id: str) -> None:
        """The worker's session is over: it takes the next job, or leaves if retiring.

        A no-op unless the worker still hosts ``session_id`` (after a crash it hosts nothing,
        and after its restart it may host another session).
        """
        worker = self._workers.get(worker_id)
        if worker is None or worker.status != "busy" or worker.session_id != session_id:
            return
        worker.session_id = None
        worker.free_by = None
        if worker.retiring:
            self._remove(worker)
            return
        self._set(worker, "idle")
        if self._queue:  # ``_request_dispatch`` would do nothing otherwise: no call
            self._request_dispatch()

    def crash(self, worker_id: str, restart_seconds: float) -> str | None:
        """The worker dies; it returns after ``restart_seconds``. Returns the session it hosted."""
        worker = self._workers[worker_id]
        if worker.status == "restarting":
            return None
        hosted = worker.session_id
        self._set(worker, "restarting")
        worker.session_id = None
        worker.free_by = None
        worker.back_at = self._clock.now + restart_seconds
        self._clock.call_after(restart_seconds, lambda _timer: self._restarted(worker_id))
        return hosted

    def _restarted(self, worker_id: str) -> None:
        worker = self._workers.get(worker_id)
        if worker is None or worker.status != "restarting":
            return
        worker.back_at = None
        if worker.retiring:
            self._remove(worker)
            return
        self._set(worker, "idle")
        self._request_dispatch()

    def set_capacity(self, workers: int) -> None:
        """Grow or shrink the pool; idle workers go first, busy ones retire when done. Growth
        brings back retiring workers at once and asks for the rest, who join after the lead
        time; a shrink cancels asks not yet served (the newest first) before removing any."""
        if workers < 0:
            raise ValueError("capacity cannot be negative")
        self.capacity = workers
        active = self._active()
        asked = sum(ask[0] for ask in self._asked)
        if workers > len(active) + asked:
            missing = workers - len(active) - asked
            for worker in self._workers.values():  # bring back retiring workers first
                if missing and worker.retiring:
                    worker.retiring = False
                    missing -= 1
            lead = self._config.provision_lead_seconds
            if missing and lead > 0:
                ask = [missing]
                self._asked.append(ask)
                self._clock.call_after(lead, lambda _timer: self._provisioned(ask))
                return
            for _ in range(missing):
                self._add_worker()
            self._request_dispatch()
            return
        excess = len(active) + asked - workers
        for ask in reversed(self._asked):  # asks not yet served go first
            withdrawn = min(excess, ask[0])
            ask[0] -= withdrawn
            excess -= withdrawn
        for worker in reversed(active):
            if excess and worker.status == "idle":
                self._remove(worker)
                excess -= 1
        for worker in reversed(active):
            if excess and worker.id in self._workers and not worker.retiring:
                worker.retiring = True
                excess -= 1

    def _provisioned(self, ask: list[int]) -> None:
        """An ask's lead time is over: what is left of it joins the pool."""
        self._asked.remove(ask)
        for _ in range(ask[0]):
            self._add_worker()
        if ask[0]:
            self._request_dispatch()

    # -- events ----------------------------------------------------------------------------

    def _request_dispatch(self) -> None:
        if self._dispatch_pending or not self._queue:
            return
        self._dispatch_pending = True
        timer = Timer()
        timer.callbacks = self._on_dispatch
        self._clock.after(0.0, timer)

    def _dispatch(self, _timer: Timer) -> None:
        """Give each queued job, oldest first, the idle worker created first, while both last
        (heap entries of workers that changed since they were pushed are skipped)."""
        self._dispatch_pending = False
        queue, counts, idle, by_order = self._queue, self._counts, self._idle, self._by_order
        while queue and counts["idle"]:  # a worker counted idle has an entry in the heap
            worker = by_order.get(heappop(idle))
            while worker is None or worker.status != "idle":
                worker = by_order.get(heappop(idle))
            session_id, _deadline, job = queue.popleft()
            self._set(worker, "busy")
            worker.session_id = session_id
            self._place(job, worker)

    def _arm_watch(self) -> None:
        if not self._queue:
            return
        deadline = self._queue[0][1]
        if self._watch_at is not None and self._watch_at <= deadline:
            return
        self._watch_at = deadline
        timer = Timer()
        timer.callbacks, timer.value = self._on_watch, deadline
        self._clock.after(deadline - self._clock.now, timer)

    def _watch(self, timer: Timer) -> None:
        """The queue's head may be due: fail the jobs that waited too long, re-arm for the rest."""
        armed_for: float = timer.value
        if self._watch_at == armed_for:
            self._watch_at = None
        now = self._clock.now
        while self._queue and self._queue[0][1] <= now + 1e-9:
            self._expire(self._queue.popleft()[2])
        self._arm_watch()


def _now(action: Callable[[], object]) -> None:
    """``defer`` without a journal: run at once."""
    action()
