"""The per-session timeline a worker runs: boot, first frame, deadlines and drain.

Why callbacks on plain timeouts rather than one generator process per session: a process would
need an interrupt (an extra event) for every end, crash or audio change, and a cancelled
``yield timeout`` still sits in the event heap. Here each session has at most one pending
deadline timer at a time, for the *earliest* of its deadlines (max duration, idle, heartbeat
loss). When audio pushes the idle deadline later nothing is scheduled: the timer wakes at the old
time, sees the new deadline and re-arms once. Every timer carries the session's ``generation``,
so a timer that outlived a transition does nothing when it fires. Timers are the clock's
``Timer`` entries (``Clock.after``): nobody waits on them.

The runtime decides *when*; the service (through ``fire``) decides *what happens*: it moves the
session through the transition table and applies the effects (events, billing, caps, worker).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from sim.clock import Clock, Timer
from sim.config import SimConfig
from sim.lifecycle import Trigger
from sim.rng import sampler
from sim.sessions.faults import FaultState
from sim.sessions.heartbeat import EPSILON
from sim.sessions.records import SessionState
from sim.settings import Settings

__all__ = ["Fire", "SessionRuntime"]

#: The service's transition-with-effects: ``fire(state, trigger)``.
Fire = Callable[[SessionState, Trigger], None]


class SessionRuntime:
    def __init__(
        self,
        clock: Clock,
        config: SimConfig,
        settings: Settings,
        *,
        boot_rng: random.Random,
        first_frame_rng: random.Random,
        faults: FaultState,
        fire: Fire,
    ) -> None:
        self._clock = clock
        self._settings = settings
        self._boot = sampler(config.scheduler.worker_boot, boot_rng)
        self._first_frame = sampler(config.scheduler.first_frame_latency, first_frame_rng)
        self._faults = faults
        self._fire = fire
        #: Each kind of timer's callbacks, one shared list each (``Timer``).
        self._on_due: list[Callable[[Timer], None]] = [self._due]
        self._on_wake: list[Callable[[Timer], None]] = [self._wake]

    def _after(self, delay: float, state: SessionState, trigger: Trigger) -> None:
        """Fire ``trigger`` after ``delay`` unless the session has moved on by then."""
        timer = Timer()
        timer.callbacks, timer.subject, timer.value = self._on_due, state, trigger
        timer.generation = state.generation
        self._clock.after(delay, timer)

    def _due(self, timer: Timer) -> None:
        state: SessionState = timer.subject
        if state.generation == timer.generation:
            self._fire(state, timer.value)

    # -- boot ------------------------------------------------------------------------------

    def boot(self, state: SessionState, now: float) -> float:
        """Schedule the first frame of a session just placed; returns the delay until it."""
        delay = self._boot()  # then the slow-boot fault's extra (asked only with the fault)
        faults = self._faults
        if faults.slow is not None:
            delay += faults.extra_boot(now)
        delay += self._first_frame()
        self._after(delay, state, "first_frame")
        return delay

    # -- deadlines while running -------------------------------------------------------------

    def check(self, state: SessionState) -> None:
        """Fire the earliest deadline of a running session if it is due; otherwise make sure a
        timer wakes for it. Its deadlines: its maximum duration, its idle timeout (every
        transport observes inbound audio) and a declared heartbeat loss; on a tie, the first of
        them in that order."""
        if state.status != "running":
            return
        now = self._clock.now
        assert state.first_frame_at is not None
        moment = state.first_frame_at + state.max_duration_seconds
        trigger: Trigger = "max_duration"
        audio = state.audio
        if audio is not None:
            idle = audio.idle_deadline(state.idle_timeout_seconds, now)
            if idle < moment:
                moment, trigger = idle, "idle_timeout"
        lost = state.heartbeat_lost_at
        if lost is not None and lost < moment:
            moment, trigger = lost, "heartbeat_lost"
        if moment <= now + EPSILON:
            self._fire(state, trigger)
            return
        if state.armed_at is not None and state.armed_at <= moment + EPSILON:
            return  # an earlier timer is pending and will re-check
        state.armed_at = moment
        timer = Timer()
        timer.callbacks, timer.subject, timer.value = self._on_wake, state, moment
        timer.generation = state.generation
        self._clock.after(moment - now, timer)

    def _wake(self, timer: Timer) -> None:
        """A deadline timer is due: re-check the session unless it has moved on since."""
        state: SessionState = timer.subject
        if state.generation == timer.generation:
            if state.armed_at == timer.value:
                state.armed_at = None
            self.check(state)

    # -- drain -----------------------------------------------------------------------------

    def drain(self, state: SessionState, now: float) -> float:
        """Schedule the end of the graceful drain after ``end`` (GAP-SES-5); returns its length.

        The customer stops publishing when it ends the session: its audio is cut here, and what
        the worker still has buffered is played out within the drain.
        """
        buffered = 0.0
        audio = state.audio
        if audio is not None:
            audio.cut(now)
            buffered = audio.buffered(now)
        settings = self._settings
        seconds = min(settings.drain_base_seconds + buffered, settings.drain_max_seconds)
        if state.heartbeat_lost_at is not None and state.heartbeat_lost_at < now + seconds:
            lost_in = state.heartbeat_lost_at - now
            self._after(lost_in, state, "heartbeat_lost")
        else:
            self._after(seconds, state, "drain_complete")
        return seconds
