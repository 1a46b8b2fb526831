"""The service's clock: target time that can run faster than the wall.

Every timer, window, timestamp and billing period reads this clock, never the wall, so a tester
can watch a 30-second idle timeout in a fraction of a second. Target seconds are wall seconds
divided by ``time_factor`` since launch; timestamps start at the real UTC time of launch.

Time is kept internally as float target seconds since launch (``t``); :meth:`Clock.iso` turns it
into the ISO-8601 UTC strings the API returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


def iso(moment: datetime) -> str:
    """Render a moment as ISO-8601 UTC with millisecond precision and a ``Z`` suffix."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Clock:
    """Target time in seconds since launch, anchored to a UTC start."""

    time_factor: float = 1.0

    def __init__(self, start_utc: datetime | None = None) -> None:
        self.start_utc = (start_utc or datetime.now(UTC)).astimezone(UTC)

    def now(self) -> float:
        raise NotImplementedError

    def at(self, t: float) -> datetime:
        """The UTC moment of target time ``t``."""
        return self.start_utc + timedelta(seconds=t)

    def iso(self, t: float) -> str:
        return iso(self.at(t))

    def seconds_of(self, moment: datetime) -> float:
        """Target time ``t`` of a UTC moment (negative before launch)."""
        return (moment - self.start_utc).total_seconds()

    def epoch(self, t: float) -> float:
        """Unix epoch seconds of target time ``t``."""
        return self.at(t).timestamp()


class ScaledClock(Clock):
    """Target seconds = wall seconds / ``time_factor`` (1.0 is real time, 0.05 is 20x faster)."""

    def __init__(
        self,
        time_factor: float = 1.0,
        *,
        start_utc: datetime | None = None,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        if not time_factor > 0:
            raise ValueError("time_factor must be positive")
        super().__init__(start_utc)
        self.time_factor = float(time_factor)
        self._wall = wall
        self._wall0 = wall()

    def now(self) -> float:
        return (self._wall() - self._wall0) / self.time_factor


class ManualClock(Clock):
    """A clock that only moves when told to: deterministic probes in this package's own tests."""

    def __init__(self, start_utc: datetime | None = None) -> None:
        super().__init__(start_utc)
        self._t = 0.0

    def now(self) -> float:
        return self._t

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self._t += seconds
