"""Billing periods: calendar months in UTC (GAP-BILL-2).

Why a module of its own: the month arithmetic is needed in three places (closing periods at each
boundary, the quota's ``current_period_*`` and the usage summary's ``current_month`` /
``previous_month`` windows) and must agree exactly in all of them. Months are identified by a
``Month`` value; its bounds are converted to simulated seconds through the one ``Clock``, so a
boundary is the same float wherever it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sim.clock import Clock

__all__ = ["Month"]


@dataclass(frozen=True, slots=True, order=True)
class Month:
    """One calendar month in UTC; ordered chronologically."""

    year: int
    month: int  # 1..12

    @classmethod
    def containing(cls, clock: Clock, seconds: float) -> Month:
        moment = clock.datetime_at(seconds)
        return cls(moment.year, moment.month)

    def next(self) -> Month:
        return Month(self.year + self.month // 12, self.month % 12 + 1)

    def previous(self) -> Month:
        return Month(self.year - (self.month == 1), (self.month - 2) % 12 + 1)

    def start_datetime(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    def start(self, clock: Clock) -> float:
        """Simulated seconds of the first instant of the month (inclusive)."""
        return clock.seconds_at(self.start_datetime())

    def end(self, clock: Clock) -> float:
        """Simulated seconds of the first instant of the next month (exclusive end)."""
        return self.next().start(clock)
