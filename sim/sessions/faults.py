"""Injectable faults of the realtime fleet (SIM-9).

``FleetFaults`` is the simulator's control panel for the session fleet: crash a worker, change
the pool's capacity or the wait queue's bound, slow down worker boots, drop a session's
heartbeats. The faults act through
the scheduler and the session runtime; the service's transition table decides what they do to a
session (``fire``). Slow start-up is the one standing condition rather than an instant action:
``FaultState`` holds it, and the extra boot time is drawn from its own ``faults`` random stream,
so injecting a fault never shifts the latencies of the other streams.

``active(now)`` is what the status roll-up reads to say "degraded" (``sim.sessions.rollup``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from sim.clock import Clock
from sim.config import SimConfig
from sim.distributions import Constant, Distribution
from sim.errors import Conflict, NotFound, Unprocessable
from sim.lifecycle import Trigger
from sim.rng import sample
from sim.sessions.heartbeat import EPSILON
from sim.sessions.records import SessionState
from sim.sessions.scheduler import Scheduler

__all__ = ["FaultState", "FleetFaults", "SlowStartup"]


@dataclass(frozen=True, slots=True)
class SlowStartup:
    extra: Distribution  # seconds added to each worker boot
    until: float | None  # simulated seconds; None: until cleared


class FaultState:
    """The standing faults: slow start-up, and how many workers crashed."""

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


class FleetFaults:
    """Fault injection on the session fleet; see the module docstring."""

    def __init__(
        self,
        clock: Clock,
        config: SimConfig,
        state: FaultState,
        scheduler: Scheduler[SessionState],
        *,
        session: Callable[[str], SessionState],
        hosted: Callable[[str], SessionState],
        fire: Callable[[SessionState, Trigger], None],
        check: Callable[[SessionState], None],
    ) -> None:
        self._clock = clock
        self._config = config
        self.state = state
        self._scheduler = scheduler
        self._session = session  # a session by id (NotFound otherwise)
        self._hosted = hosted  # a live session by id
        self._fire = fire
        self._check = check
        self._losing: dict[str, SessionState] = {}

    def crash_worker(self, *, session_id: str | None = None, worker_id: str | None = None) -> str:
        """Crash the worker hosting ``session_id`` (or the worker ``worker_id``).

        Its session fails with ``worker_lost`` (or, while draining, ends as the customer asked),
        billed up to the crash and only once; the worker returns after
        ``worker_restart_seconds``. Returns the crashed worker's id.
        """
        if (session_id is None) == (worker_id is None):
            raise ValueError("name exactly one of session_id or worker_id")
        if session_id is not None:
            state = self._session(session_id)
            if state.worker_id is None or state.status not in ("starting", "running", "ending"):
                raise Conflict("session.no_worker", f"Session {session_id} is not on a worker.")
            worker_id = state.worker_id
        assert worker_id is not None
        if self._scheduler.find(worker_id) is None:
            raise NotFound("worker.not_found", f"No worker {worker_id}.")
        hosted = self._scheduler.crash(worker_id, self._config.scheduler.worker_restart_seconds)
        self.state.crashes += 1
        if hosted is not None:
            self._fire(self._hosted(hosted), "worker_crash")
        return worker_id

    def set_capacity(self, workers: int) -> None:
        """Grow or shrink the worker pool (capacity loss: queued jobs then time out)."""
        self._scheduler.set_capacity(workers)

    def set_queue_size(self, jobs: int) -> None:
        """Bound the wait queue (0 with no idle worker: every create is refused
        ``at_capacity``)."""
        self._scheduler.set_queue_bound(jobs)

    @property
    def queue_size(self) -> int:
        return self._scheduler.queue_bound

    def slow_startup(
        self, extra: float | Distribution, *, duration: float | None = None
    ) -> SlowStartup:
        """Add ``extra`` seconds (or a distribution) to every worker boot for ``duration``
        seconds from now (``None``: until ``clear_slow_startup``)."""
        until = None if duration is None else self._clock.now + duration
        return self.state.slow_startup(extra, until)

    def clear_slow_startup(self) -> None:
        self.state.clear_slow_startup()

    def lose_heartbeats(self, session_id: str, duration: float) -> float | None:
        """Drop the running session's heartbeats for ``duration`` seconds from now.

        ``usage`` freezes at the last received heartbeat; when the silence exceeds
        ``heartbeat_loss_limit_seconds`` the session fails with ``worker_lost``. Returns the
        moment the worker will be declared lost, or ``None`` if it survives the loss.
        """
        state = self._session(session_id)
        if state.status != "running" or state.heartbeats is None:
            raise Conflict("session.not_running", f"Session {session_id} is not running.")
        if duration <= 0:
            raise Unprocessable("validation.range", "`duration` must be > 0.", param="duration")
        limit = self._config.sessions.heartbeat_loss_limit_seconds
        lost_at = state.heartbeats.lose(self._clock.now, duration, limit)
        self._losing[state.id] = state
        if lost_at is not None:
            current = state.heartbeat_lost_at
            state.heartbeat_lost_at = lost_at if current is None else min(current, lost_at)
            self._check(state)
        return lost_at

    def heartbeat_losses(self, now: float) -> list[tuple[str, float]]:
        """The live sessions whose heartbeats are being dropped at ``now``, each with the end of
        its loss window, in the order the losses were injected (what a watcher is shown)."""
        losses = []
        for session_id, state in self._losing.items():
            track = state.heartbeats
            if state.status not in ("running", "ending") or track is None:
                continue
            for start, end in track.losses:
                if start - EPSILON <= now < end - EPSILON:
                    losses.append((session_id, end))
                    break
        return losses

    def active(self, now: float) -> bool:
        """A fault is under way: slow start-up, or a live session losing heartbeats."""
        if self.state.slow_active(now):
            return True
        self._losing = {i: s for i, s in self._losing.items() if s.status in ("running", "ending")}
        return any(
            s.heartbeats is not None and s.heartbeats.losing(now) for s in self._losing.values()
        )
