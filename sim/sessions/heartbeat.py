"""Derived worker heartbeats and usage (GAP-SES-3, RES-SESS-5, SIM-4).

A running worker heartbeats every ``interval`` seconds from its first frame, each heartbeat
carrying the usage so far. Nothing is scheduled per heartbeat: the boundaries are arithmetic
(``first_frame_at + k * interval``), so ``usage`` as of "the last heartbeat the platform
received" is computed from the session's times on demand, and a one-hour session costs no more
events than a one-minute one.

Heartbeat loss (a fault) is a set of windows during which boundaries are not received. The
platform declares the worker lost when ``loss_limit`` seconds pass after the last received
heartbeat without another one arriving.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["EPSILON", "HeartbeatTrack", "billable_seconds"]

#: Tolerance for float arithmetic on simulated times (well under the 1 ms timestamp resolution).
EPSILON = 1e-9


def billable_seconds(first_frame_at: float, until: float) -> int:
    """Whole seconds from the first frame to ``until``, rounded up (GAP-SES-3)."""
    seconds = math.ceil(until - first_frame_at - EPSILON)
    return seconds if seconds > 0 else 0


@dataclass(slots=True)
class HeartbeatTrack:
    first_frame_at: float
    interval: float
    #: Merged [start, end) windows, replaced as a whole by ``lose``: a tuple, so that every
    #: running session (almost none of which loses a heartbeat) shares the empty default.
    losses: tuple[tuple[float, float], ...] = ()

    def _boundary_at_or_before(self, moment: float) -> float:
        k = math.floor((moment - self.first_frame_at) / self.interval + EPSILON)
        return self.first_frame_at + max(k, 0) * self.interval

    def _boundary_at_or_after(self, moment: float) -> float:
        k = math.ceil((moment - self.first_frame_at) / self.interval - EPSILON)
        return self.first_frame_at + max(k, 0) * self.interval

    def _lost(self, boundary: float) -> bool:
        # The first frame itself always proves the worker alive; without a loss window nothing
        # is lost (the common case, answered before building the scan below).
        if not self.losses or boundary <= self.first_frame_at + EPSILON:
            return False
        return any(start - EPSILON <= boundary < end - EPSILON for start, end in self.losses)

    def _boundary_before(self, moment: float) -> float:
        k = math.ceil((moment - self.first_frame_at) / self.interval - EPSILON) - 1
        return self.first_frame_at + max(k, 0) * self.interval

    def last_received(self, now: float) -> float:
        """The moment of the last heartbeat the platform received by ``now``."""
        boundary = self._boundary_at_or_before(now)
        while self._lost(boundary):
            window_start = next(s for s, e in self.losses if s - EPSILON <= boundary < e - EPSILON)
            boundary = self._boundary_before(window_start)
        return boundary

    def usage_seconds(self, now: float) -> int:
        """``usage.billable_seconds`` as the last received heartbeat reported it."""
        return billable_seconds(self.first_frame_at, self.last_received(now))

    def lose(self, start: float, duration: float, loss_limit: float) -> float | None:
        """Drop heartbeats in ``[start, start + duration)``; returns when the worker is declared
        lost, or ``None`` if a heartbeat gets through in time."""
        end = start + duration
        merged: list[tuple[float, float]] = []
        for s, e in self.losses:
            if s <= end and start <= e:  # overlapping or touching: merge
                start, end = min(s, start), max(e, end)
            else:
                merged.append((s, e))
        merged.append((start, end))
        merged.sort()
        self.losses = tuple(merged)
        last = self.last_received(start)
        resumed = self._boundary_at_or_after(end)
        deadline = last + loss_limit
        return deadline if resumed > deadline + EPSILON else None

    def losing(self, now: float) -> bool:
        """Whether heartbeats are being dropped at ``now``."""
        return any(s - EPSILON <= now < e - EPSILON for s, e in self.losses)
