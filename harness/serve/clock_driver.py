"""Served mode's clock source: the virtual clock follows the wall clock, scaled (SIM-1, SIM-8).

Why it exists: in-process the clock only moves when a caller advances it. A real server has to
let timers (start-up timeouts, idle and max-duration ends, run completions) fire on their own, as
wall time passes, without anyone calling the API. The mapping is linear,

    sim_time = sim_anchor + (wall - wall_anchor) / factor

so a factor of 1 is real time, ``0.1`` runs the simulation ten times faster than the wall clock
and ``60`` makes one simulated second last a wall minute.

Two things move the clock, both on the event loop's thread (SimPy is not thread-safe):

* ``sync()``: called at the start of every request by ``harness.serve.app.ServedApp``, so a request
  always sees the state as of "now";
* ``run()``: a background task that sleeps until the wall time at which the next scheduled SimPy
  event is due (``Clock.next_event_at``), then syncs. It never polls: with nothing scheduled it
  waits until ``poke()`` says a request may have scheduled something.

The admin endpoint ``POST /_sim/clock/advance`` may also jump the clock forward. The driver notices
the jump at its next ``sync`` and moves its anchor by the same amount, so simulated time keeps
flowing from the new point instead of stalling until the wall clock catches up.

It also gives the wall-clock moment itself (``wall_now``), injected into the webhook dispatcher
as its signing clock: a receiver checks ``webhook-timestamp`` against its own clock, and at any
factor but 1 the simulated time is far from it.

This is the only place in the project that reads the wall clock, and it stays out of ``sim/``.
``simpy.RealtimeEnvironment`` is not used: it blocks the thread with ``time.sleep``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime

from sim.clock import Clock

__all__ = ["WallClockDriver", "wall_now"]

WallClock = Callable[[], float]
ErrorReporter = Callable[[Exception], None]


def wall_now() -> datetime:
    """The real moment, as an aware UTC datetime (what served mode signs webhooks at)."""
    return datetime.now(UTC)


def _print_error(error: Exception) -> None:
    print("avatar-sim serve: a simulated event failed while the clock advanced:", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr)


class WallClockDriver:
    """Maps a monotonic wall clock onto a ``sim.clock.Clock`` with ``sim = (wall - t0) / factor``.

    ``wall`` is injectable so the mapping can be tested without real waiting; it defaults to
    ``time.monotonic``, the clock asyncio's timers use as well. ``on_error`` receives an exception
    raised by a simulated event during ``sync_safely`` (default: a traceback on stderr).
    """

    def __init__(
        self,
        clock: Clock,
        factor: float,
        wall: WallClock = time.monotonic,
        on_error: ErrorReporter = _print_error,
    ) -> None:
        if not factor > 0:
            raise ValueError("the time factor must be a positive number of wall seconds")
        self.clock = clock
        self.factor = factor
        self._wall = wall
        self._wall_anchor = wall()
        self._sim_anchor = clock.now
        self._last_seen = clock.now
        self._wake: asyncio.Event | None = None
        self._on_error = on_error

    # -- the mapping -----------------------------------------------------------------------------

    def sim_time_at(self, wall: float) -> float:
        """The simulated time that corresponds to the wall instant ``wall``."""
        return self._sim_anchor + (wall - self._wall_anchor) / self.factor

    def wall_time_at(self, sim: float) -> float:
        """The wall instant at which simulated time reaches ``sim``."""
        return self._wall_anchor + (sim - self._sim_anchor) * self.factor

    def sync(self) -> float:
        """Advance the clock to the simulated time of the current wall instant; return it.

        Runs every SimPy event due up to then, in order. Never moves the clock backwards.
        """
        self._absorb_external_jump()
        # The clock stops at its horizon (the end of year 9999), however small the factor.
        target = min(self.sim_time_at(self._wall()), self.clock.horizon)
        try:
            if target > self.clock.now:
                self.clock.advance_to(target)
        finally:
            # Even when an event fails part-way, the distance covered was ours, not a jump.
            self._last_seen = self.clock.now
        return self.clock.now

    def sync_safely(self) -> None:
        """``sync``, but a failing simulated event (a bug in the domain) is reported instead of
        raised: the event is consumed, so the next sync carries on, and one bad timer neither
        stops the clock nor turns every later request into a bare 500."""
        try:
            self.sync()
        except Exception as error:
            self._on_error(error)

    def _absorb_external_jump(self) -> None:
        jump = self.clock.now - self._last_seen
        if jump > 0:
            self._sim_anchor += jump
        self._last_seen = self.clock.now

    def seconds_until_next_event(self) -> float | None:
        """Wall seconds until the next scheduled event is due; ``None`` if nothing is scheduled."""
        self._absorb_external_jump()
        due = self.clock.next_event_at()
        if due is not None and due <= self.clock.now:
            # Something is due right now. SimPy 4.1's ``run(until=t)`` also leaves its spent
            # stop-event in the queue at ``t``; stepping through what is due now (a no-op for
            # that one) keeps it from looking like a pending event and spinning this loop.
            self.clock.advance_to(self.clock.now)
            due = self.clock.next_event_at()
        if due is None:
            return None
        return max(self.wall_time_at(due) - self._wall(), 0.0)

    # -- the background task ---------------------------------------------------------------------

    def poke(self) -> None:
        """Tell the background task to recompute its wake-up time (a request may have scheduled
        an earlier event, or advanced the clock). Safe to call before ``run`` has started."""
        if self._wake is not None:
            self._wake.set()

    async def run(self) -> None:
        """Keep the clock in step with the wall clock until cancelled.

        Each round: sync, find the wall time of the next due event, sleep until then or until
        poked. Cancellation (server shutdown) ends it between rounds; the clock stays consistent
        because ``sync`` runs to completion synchronously.
        """
        self._wake = asyncio.Event()
        wake = self._wake
        try:
            while True:
                self.sync_safely()
                delay = self.seconds_until_next_event()
                wake.clear()
                if delay is None:
                    await wake.wait()
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout=delay)
        finally:
            self._wake = None
