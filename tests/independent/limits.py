"""The session-create rate limit and the concurrency caps.

Rate: 10 creates per minute per key, counted by a fixed calendar-minute window or by a token
bucket, by reading; every authenticated ``POST /v1/sessions`` spends budget, refused ones
included. Caps: one live session per key, five per organization (tunable up to twenty); which
states are "live" is the reading's call. The worker pool is the third gate: no free worker means
503 ``at_capacity``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from .clock import Clock
from .faults import FaultSet
from .readings import Reading
from .store import Session

RATE_LIMIT = 10
RATE_WINDOW = 60.0
PER_KEY_CAP = 1
ORG_CAP_CEILING = 20


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    reset_in: float  # target seconds until the budget is whole again
    retry_after: float  # target seconds until one more request would pass


class FixedWindow:
    """Counts per calendar minute of the target clock (windows align to UTC minutes)."""

    def __init__(self, clock: Clock, capacity: int) -> None:
        self.clock, self.capacity = clock, capacity
        self.counts: dict[str, tuple[int, int]] = {}

    def hit(self, bucket: str, t: float) -> RateDecision:
        epoch = self.clock.epoch(t)
        window = math.floor(epoch / RATE_WINDOW)
        reset_in = (window + 1) * RATE_WINDOW - epoch
        seen_window, count = self.counts.get(bucket, (window, 0))
        if seen_window != window:
            count = 0
        allowed = count < self.capacity
        if allowed:
            count += 1
        self.counts[bucket] = (window, count)
        remaining = max(0, RATE_LIMIT - count)
        return RateDecision(allowed, RATE_LIMIT, remaining, reset_in, reset_in)


class TokenBucket:
    """Holds up to ``capacity`` tokens, refilled at 10 per minute."""

    def __init__(self, clock: Clock, capacity: int) -> None:
        self.clock, self.capacity = clock, capacity
        self.rate = RATE_LIMIT / RATE_WINDOW
        self.state: dict[str, tuple[float, float]] = {}

    def hit(self, bucket: str, t: float) -> RateDecision:
        tokens, last = self.state.get(bucket, (float(self.capacity), t))
        tokens = min(float(self.capacity), tokens + (t - last) * self.rate)
        allowed = tokens >= 1.0
        if allowed:
            tokens -= 1.0
        self.state[bucket] = (tokens, t)
        remaining = max(0, min(RATE_LIMIT, math.floor(tokens)))
        reset_in = (self.capacity - tokens) / self.rate
        retry_after = 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate
        return RateDecision(allowed, RATE_LIMIT, remaining, reset_in, retry_after)


class RateLimiter:
    def __init__(self, clock: Clock, reading: Reading, faults: FaultSet) -> None:
        self.clock, self.reading, self.faults = clock, reading, faults
        capacity = RATE_LIMIT + (1 if faults.on("rate_limit_off_by_one") else 0)
        kind = FixedWindow if reading.rate_limiter == "fixed_window" else TokenBucket
        self.impl = kind(clock, capacity)

    def hit(self, key_id: str, t: float) -> RateDecision:
        bucket = "*" if self.faults.on("rate_limit_shared_across_keys") else key_id
        return self.impl.hit(bucket, t)

    def headers(self, decision: RateDecision, t: float) -> dict[str, str]:
        if self.reading.rate_reset == "delta":
            reset = str(math.ceil(decision.reset_in))
        else:
            reset = str(math.ceil(self.clock.epoch(t + decision.reset_in)))
        return {
            "X-RateLimit-Limit": str(decision.limit),
            "X-RateLimit-Remaining": str(decision.remaining),
            "X-RateLimit-Reset": reset,
        }


def counts_toward_caps(session: Session, reading: Reading, faults: FaultSet) -> bool:
    """Whether a session occupies a concurrency slot."""
    status = session.status
    if status == "canceled" and not session.placed and faults.on("cap_counts_terminal_sessions"):
        return True
    if session.terminal:
        return False
    if status == "ending":
        return reading.caps_count_ending
    if status in ("created", "queued") and not session.placed:
        return reading.caps_count_queued
    return True


def per_key_cap(faults: FaultSet) -> int:
    return 2 if faults.on("per_key_cap_two") else PER_KEY_CAP


def cap_room(
    sessions: Iterable[Session],
    key_id: str,
    org_id: str,
    org_cap: int,
    reading: Reading,
    faults: FaultSet,
) -> bool:
    """Whether one more live session fits under the key and organization caps."""
    per_key = per_org = 0
    for s in sessions:
        if s.org_id != org_id or not counts_toward_caps(s, reading, faults):
            continue
        per_org += 1
        if s.key_id == key_id:
            per_key += 1
    return per_key < per_key_cap(faults) and per_org < min(org_cap, ORG_CAP_CEILING)
