"""Pacing session creates under the seed's rate limit, and reading a target's retry hints.

Why the run paces itself: the seed allows 10 ``POST /v1/sessions`` a minute per key, and a run
creates several dozen sessions. Waiting out refusals one by one would turn every check into a
guess, so the run keeps its own record of what each key sent (every attempt, refused or not, since
a deployment may count refusals too) and never sends more than the limit in any window. A target
that refuses although the record shows room breaks the seed's limit under every reading of it:
fixed windows, sliding logs, sliding-window counters (which weigh the previous fixed window too)
and token buckets all let a create through once a key has sent fewer than the limit in the last
two windows. Such a refusal is only judged once the run has itself watched the key for that long
(traffic from before the run is unknown), and a key counts as quiet, fresh for a burst, after two
windows without a create. Pacing itself allows the limit per window: a limiter that weighs the
previous window may refuse now and then, and its refusals are waited out.

``retry_hint`` reads ``Retry-After`` and ``X-RateLimit-Reset`` in every standard form: seconds
from now, Unix seconds, or an HTTP date, counted from the response's ``Date`` when it has one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from harness.target import Exchange

__all__ = ["KeyPacer", "headers_hint", "retry_hint"]

#: An ``X-RateLimit-Reset`` at least this large is a Unix time, not a delay (2001-09-09).
_UNIX_TIME_FLOOR = 1_000_000_000


@dataclass
class KeyPacer:
    """One key's record of creates sent, in target seconds, for ``limit`` per ``window``."""

    limit: int
    window: float
    #: The run's own clock may lag the target's by a request's round trip: judged with slack.
    slack: float = 5.0
    sent: deque[float] = field(default_factory=deque)
    watched_since: float | None = None

    def start(self, now: float) -> None:
        """Begin watching (the run's start): what the key did before is unknown."""
        if self.watched_since is None:
            self.watched_since = now

    def record(self, now: float) -> None:
        """A create was sent at ``now``."""
        self.start(now)
        self.sent.append(now)

    def in_window(self, now: float, span: float | None = None) -> int:
        """Creates sent within the last ``span`` (default: the window plus slack)."""
        cutoff = now - (self.window + self.slack if span is None else span)
        return sum(1 for at in self.sent if at > cutoff)

    def ready_at(self, now: float, count: int = 1) -> float:
        """The earliest target time at which ``count`` more creates fit in every window."""
        if count <= 0:
            return now
        span = self.window + self.slack
        recent = [at for at in self.sent if at > now - span]
        over = len(recent) + count - self.limit
        if over <= 0:
            return now
        if over > len(recent):  # more than a window's worth: the rest waits for the next one
            return now + span
        return recent[over - 1] + span

    def last_sent(self) -> float | None:
        return self.sent[-1] if self.sent else None

    @property
    def memory(self) -> float:
        """How far back any reading of the limit may look: two windows (plus slack)."""
        return 2 * self.window + self.slack

    def quiet_at(self, now: float) -> float:
        """When this key will have been quiet long enough to be fresh under every reading."""
        since = max(self.watched_since if self.watched_since is not None else now,
                    self.last_sent() or -float("inf"))  # fmt: skip
        return since + self.memory

    def refusal_breaks_the_limit(self, now: float) -> bool:
        """Whether a rate-limit refusal at ``now`` breaks the seed's limit under every reading:
        the run has watched the key for two windows and sent fewer than the limit in them."""
        watched = self.watched_since is not None and now - self.watched_since >= self.memory
        # The refused attempt itself is already recorded; the others must leave room for it.
        return watched and self.in_window(now, self.memory) <= self.limit


def retry_hint(exchange: Exchange, wall_now: float | None = None) -> float | None:
    """Seconds to wait before retrying, from ``Retry-After`` or else ``X-RateLimit-Reset``, or
    ``None`` when neither says. Negative values become 0."""
    return headers_hint(exchange.headers, wall_now)


def headers_hint(headers: Mapping[str, str], wall_now: float | None = None) -> float | None:
    """``retry_hint`` of a response's headers (names in lower case, as httpx gives them)."""
    for name in ("retry-after", "x-ratelimit-reset"):
        raw = (headers.get(name) or "").strip()
        if not raw:
            continue
        seconds = _seconds_from(raw, headers, wall_now)
        if seconds is not None:
            return max(seconds, 0.0)
    return None


def _seconds_from(raw: str, headers: Mapping[str, str], wall_now: float | None) -> float | None:
    number = raw.split(",")[0].split(";")[0].strip()
    try:
        value = float(number)
    except ValueError:
        value = None
    if value is not None:
        if value < _UNIX_TIME_FLOOR:
            return value
        return value - _target_now(headers, wall_now)
    try:
        until = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return until.timestamp() - _target_now(headers, wall_now)


def _target_now(headers: Mapping[str, str], wall_now: float | None) -> float:
    """The target's idea of now: its ``Date`` header, else this machine's clock."""
    date = headers.get("date")
    if date:
        try:
            return parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError):
            pass
    return datetime.now(UTC).timestamp() if wall_now is None else wall_now
