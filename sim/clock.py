"""The one virtual clock and its calendar: the only code that touches SimPy's internals.

Simulated time is seconds (float) since ``epoch`` (an aware UTC datetime from the config). Every
timestamp, timer, window and billing bucket is computed from ``Clock.now``; nothing in ``sim/``
reads the wall clock. ``advance`` is forward-only (Stripe Test Clocks' rule): it runs every event
due up to and including the target time, in order, and then sets the clock to the target. It
never passes ``LAST_INSTANT`` (``horizon``, the end of November 9999): past it some timestamp (the
end of the billing month) could not be written, and answers would fail.

Why one seam over SimPy: SimPy keeps its calendar (a heap of ``(time, priority, id, event)``), its
event counter and its time in private attributes and offers no cheap public way to schedule a
plain callback. This module reads and writes them, so that nothing else has to: services and the
harness read ``Clock.now`` (a plain attribute, kept equal to SimPy's time by the clock, which is
the only code that steps the environment) and schedule callbacks with ``Clock.after`` or
``Clock.follow``. SimPy processes (``clock.env.process``, ``env.timeout``) stay SimPy's public API.

Conversions are integer arithmetic on microseconds since the Unix epoch, the same arithmetic
``datetime`` does, so a simulated instant always maps to the same text and the same ULID time
without building a ``datetime``. Records keep simulated seconds and format them when read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from heapq import heappush
from typing import Any, ClassVar, Final, Generic, TypeVar

import simpy
from simpy.events import NORMAL

__all__ = ["LAST_INSTANT", "Clock", "Timer", "format_timestamp"]

T = TypeVar("T")

#: The last instant the clock may reach: everything written about "now" stays a four-digit-year
#: timestamp, including the end of the billing month that contains it (1 December 9999).
LAST_INSTANT = datetime(9999, 11, 30, 23, 59, 59, 999_000, tzinfo=UTC)

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_US_PER_MINUTE = 60_000_000
_MINUTES_PER_DAY = 1440
#: "HH:MM:" of each minute of a day (a new minute's text is its day's and one of these).
_MINUTES = tuple(f"{minute // 60:02d}:{minute % 60:02d}:" for minute in range(_MINUTES_PER_DAY))
_SECONDS = tuple(f"{second:02d}." for second in range(60))  # "SS." of a second in its minute
_MILLIS = tuple(f"{ms:03d}Z" for ms in range(1000))  # "mmmZ" of a millisecond in its second


def format_timestamp(moment: datetime) -> str:
    """ISO-8601 UTC with millisecond precision and a ``Z``: ``2026-01-01T00:00:00.000Z``.

    The year is always four digits (``0001-…``): ``strftime("%Y")`` does not pad years before
    1000 on every platform, and a three-digit year is not ISO-8601 (GAP-USAGE-4).
    """
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}."
        f"{moment.microsecond // 1000:03d}Z"
    )


class Timer:
    """One pending callback on the calendar: ``Clock.after`` calls each of ``callbacks`` with
    the timer when it is due.

    A fast path beside its reference, a SimPy ``Timeout`` (``Clock.after_as_timeout``; ``make
    bench`` prints what it saves a month). Nobody waits on these timers, they only call back, so
    a ``Timer`` is the least ``Environment.step`` needs of an event (``callbacks``, and ``_ok`` to
    say it did not fail) plus what its callback reads: the ``subject`` it is about, that
    subject's ``generation`` when it was armed (a later change makes it stale) and a ``value``.
    It takes the place a ``Timeout`` of the same delay would (same time, priority and sequence
    number), so the order of events is the same either way.

    Built with ``Timer()`` and its attributes set by the caller. A callbacks list may be shared
    by many timers: ``step`` replaces an event's list with ``None`` and iterates the old one,
    never changing it.
    """

    __slots__ = ("callbacks", "generation", "subject", "value")
    #: ``Environment.step`` reads it after the callbacks: a timer never fails.
    _ok: ClassVar[bool] = True

    callbacks: list[Callable[[Timer], None]] | None
    subject: Any
    generation: int
    value: Any


class Clock:
    """Owns the simulation environment and its calendar, and converts between simulated
    seconds and datetimes."""

    #: Simulated seconds since the epoch: SimPy's time, kept here as a plain attribute by the
    #: clock (the only code that steps the environment). Read it; never write it.
    now: float

    def __init__(self, epoch: datetime) -> None:
        self.epoch = epoch
        # Started at 0.0, not SimPy's default 0: SimPy only ever adds delays to it, so its time
        # stays a float.
        self.env = simpy.Environment(initial_time=0.0)
        self.now = 0.0
        #: SimPy's calendar, a heap of (time, priority, sequence number, event), and the counter
        #: that numbers every scheduled event: a ``Timer`` goes where ``schedule`` puts an event.
        self._queue: Final[list[Any]] = self.env._queue
        self._eid: Final[Iterator[int]] = self.env._eid
        #: Simulated seconds of ``LAST_INSTANT``: every timestamp and id (ULIDs end in 10889)
        #: stays writable up to here, so the clock refuses to go further.
        self.horizon = (LAST_INSTANT - epoch).total_seconds()
        # Microseconds of the epoch since the Unix epoch, exactly (datetime arithmetic is exact).
        self._epoch_us = (epoch - _UNIX_EPOCH) // _MICROSECOND
        self._days: dict[int, str] = {}  # "YYYY-MM-DDT" of a day since the Unix epoch
        self._minutes: dict[int, str] = {}  # "YYYY-MM-DDTHH:MM:" of a minute since then

    @property
    def scheduled_events(self) -> int:
        """Events scheduled on the environment so far, whoever scheduled them: the yardstick of
        the cost rule (simulated cost must not grow with simulated duration). Read from SimPy's
        event counter, whose ``repr`` is ``count(N)``, N being the next number to hand out."""
        counter = repr(self._eid)
        return int(counter[counter.index("(") + 1 : -1])

    # -- the calendar ------------------------------------------------------------------------

    def after(self, delay: float, timer: Timer) -> None:
        """Call ``timer``'s callbacks ``delay`` seconds from now (now, if ``delay`` is not
        positive): pushed exactly as ``Environment.schedule`` pushes a ``Timeout``."""
        moment = self.now + (delay if delay > 0.0 else 0.0)
        heappush(self._queue, (moment, NORMAL, next(self._eid), timer))

    def after_as_timeout(self, delay: float, timer: Timer) -> None:
        """``after``'s reference: the same callbacks on a SimPy ``Timeout`` of the same delay."""
        callbacks = timer.callbacks
        assert callbacks is not None
        event = self.env.timeout(delay if delay > 0.0 else 0.0)
        event.callbacks.extend(partial(_call_back, callback, timer) for callback in callbacks)

    def call_after(self, delay: float, callback: Callable[[Timer], None]) -> None:
        """Call ``callback`` once, ``delay`` seconds from now (a timer of its own)."""
        timer = Timer()
        timer.callbacks = [callback]
        self.after(delay, timer)

    def follow(self, plan: Iterable[tuple[float, T]], act: Callable[[T], object]) -> None:
        """Call ``act(tag)`` at each ``(instant, tag)`` of ``plan`` (in time order), from the
        next step on: one timer per distinct instant, each drawn from ``plan`` as it comes
        (instants already past are acted on at once)."""
        follower = _Follower(self, iter(plan), act)
        first = next(follower.plan, None)
        if first is not None:
            follower.sleep(*first)

    def step(self) -> None:
        """Run the next scheduled event, whenever it is due (for tests that count events)."""
        if self._queue:
            self.now = self._queue[0][0]
        self.env.step()

    def datetime_at(self, seconds: float) -> datetime:
        return self.epoch + timedelta(microseconds=round(seconds * 1_000_000))

    def seconds_at(self, moment: datetime) -> float:
        return (moment - self.epoch).total_seconds()

    def now_datetime(self) -> datetime:
        return self.datetime_at(self.now)

    def timestamp(self, seconds: float | None = None) -> str:
        """The ISO-8601 form of ``seconds`` (default: now), as ``format_timestamp`` writes it.

        The text up to the minute ("YYYY-MM-DDTHH:MM:") is kept per minute, bounded: instants
        formatted one after another share it, and only the seconds and milliseconds remain to
        write, from tables. A new minute is its day's text (kept per day) and the minute's."""
        us = self._epoch_us + round((self.now if seconds is None else seconds) * 1_000_000)
        minute, within = divmod(us, _US_PER_MINUTE)
        prefix = self._minutes.get(minute)
        if prefix is None:
            day, minute_of_day = divmod(minute, _MINUTES_PER_DAY)
            prefix = (self._days.get(day) or self._day_prefix(day)) + _MINUTES[minute_of_day]
            if len(self._minutes) >= 4096:
                self._minutes.clear()
            self._minutes[minute] = prefix
        second, ms = divmod(within // 1000, 1000)
        return prefix + _SECONDS[second] + _MILLIS[ms]

    def timestamp_or_none(self, seconds: float | None) -> str | None:
        """``timestamp`` of a moment that may not have come yet: ``None`` stays ``None``."""
        return None if seconds is None else self.timestamp(seconds)

    def _day_prefix(self, day: int) -> str:
        """The ``YYYY-MM-DDT`` of ``day`` (days since the Unix epoch), kept for the next time."""
        moment = _UNIX_EPOCH + timedelta(days=day)
        # Not strftime("%Y"): it does not pad years before 1000 everywhere (GAP-USAGE-4).
        prefix = self._days[day] = f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        return prefix

    def epoch_ms(self, seconds: float | None = None) -> int:
        """Unix milliseconds of ``seconds`` (default: now); the time part of ULIDs.

        The value ``int(datetime.timestamp() * 1000)`` gives, computed without the datetime.
        """
        # Microseconds since the Unix epoch, rounded so the same float always gives the same id.
        us = self._epoch_us + round((self.now if seconds is None else seconds) * 1_000_000)
        return int(us / 1_000_000 * 1000)

    @property
    def epoch_us(self) -> int:
        """Microseconds of the epoch since the Unix epoch (for callers that inline ``epoch_ms``:
        ``int((epoch_us + round(seconds * 1_000_000)) / 1_000_000 * 1000)``)."""
        return self._epoch_us

    def unix_seconds(self, seconds: float | None = None) -> float:
        us = self._epoch_us + round((self.now if seconds is None else seconds) * 1_000_000)
        return us / 1_000_000

    def next_event_at(self) -> float | None:
        """When the next scheduled event is due, or ``None`` when nothing is scheduled."""
        peek = float(self.env.peek())
        return None if peek == float("inf") else peek

    def advance(self, seconds: float) -> None:
        """Run every event due within ``seconds`` from now, in order; forward only."""
        if seconds < 0:
            raise ValueError("the clock only moves forward")
        self.advance_to(self.now + seconds)

    def advance_to(self, target: float) -> None:
        if target < self.now:
            raise ValueError("the clock only moves forward")
        if not target <= self.horizon:  # also refuses NaN
            raise ValueError(f"the clock cannot pass {format_timestamp(LAST_INSTANT)}")
        if self.env._now != self.now:
            raise RuntimeError(
                "the SimPy environment was stepped outside the clock (env.step or env.run), so "
                "Clock.now fell behind: step it with Clock.step, advance or advance_to"
            )
        # Step through everything due at or before the target (simpy's run(until=t) would stop
        # *before* events at exactly t and leave its own marker event in the queue), then move
        # the clock to the target. Nothing else is due in between, so moving the time directly
        # is exactly what run(until=...) would do, minus the marker. ``now`` is set to the
        # head's time before each step, which is the time ``step`` gives SimPy.
        step, calendar = self.env.step, self._queue
        while calendar:
            due = calendar[0][0]
            if due > target:
                break
            self.now = due
            step()
        if target > self.now:
            self.now = self.env._now = float(target)  # SimPy has no public setter


def _call_back(callback: Callable[[Timer], None], timer: Timer, _event: object) -> None:
    callback(timer)


class _Follower(Generic[T]):
    """``Clock.follow``'s state: the plan, the action and the pending instant's tag. Its timers
    share one callbacks list."""

    __slots__ = ("act", "clock", "on_wake", "plan", "tag")
    tag: T

    def __init__(self, clock: Clock, plan: Iterator[tuple[float, T]], act: Callable[[T], object]):
        self.clock = clock
        self.plan = plan
        self.act = act
        self.on_wake: list[Callable[[Timer], None]] = [self.wake]

    def sleep(self, at: float, tag: T) -> None:
        """Wake at ``at`` (or now, if it is past) to act on ``tag``."""
        self.tag = tag
        timer = Timer()
        timer.callbacks = self.on_wake
        self.clock.after(at - self.clock.now, timer)

    def wake(self, _timer: Timer) -> None:
        clock, act = self.clock, self.act
        act(self.tag)
        for at, tag in self.plan:
            if at > clock.now:
                self.sleep(at, tag)
                return
            act(tag)
