"""The create rate limit (10 ``POST /v1/sessions`` a minute per key), judged from the run's own
record of every create each key sent.

Why these three bounds: the seed fixes the limit, not the limiter. Fixed windows, sliding logs,
sliding-window counters and token buckets are all readings of "10 per minute", and the model
must pass every one of them and fail anything looser. What every such limiter guarantees:

* **No early refusal.** A key that sent at most 10 creates (of any outcome, replays included) in
  the last two windows is never refused ``rate_limit``: each reading admits it. Judged only once
  the run has watched the key for two windows (what it did before the run is unknown).
* **No more than 10 in a window after a refusal.** A refusal at ``r`` means the limiter was full
  then; in the window that follows (``r`` to ``r`` plus 60 s) no reading admits more than 10:
  a fixed window's boundary falls inside it once, a sliding log counts it whole, a token bucket
  refills 10 tokens in it, and a sliding-window counter's estimate stays at or above what its
  window holds. A limiter of 15 a minute (or of 10 per 30 s) breaks this at once.
* **No more than 10 per window across any span.** In any span of ``L`` seconds a fixed window
  (the loosest reading) admits at most 10 for each window the span touches, ``floor(L/60) + 2``.
* **No more than 10 in one declared window.** Where the target declares when its limit resets
  (``X-RateLimit-Reset`` on admitted creates), a run of admissions in which that moment never
  jumps ahead by half a window or more crossed no window boundary: it holds at most 10, plus
  what a bucket refills at 10 a minute while the run lasts.

Idempotent replays are left out of the counts of admitted creates (a deployment may answer them
before its limiter) and kept in the counts of what a key sent (a deployment may count them): both
choices make the bounds lenient, never strict.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["RATE", "RATE_SLACK", "Attempt", "RateBook", "declared_reset"]

RATE = model_rule("create_rate_limit")

LIMIT = SEED.creates_per_window
WINDOW = SEED.rate_window_seconds
#: Target seconds of clock skew between the run's stamps and the target's own counting.
RATE_SLACK = 3.0

Outcome = Literal["accepted", "limited", "other"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One create a key sent: when, its outcome, whether it replayed an idempotent create, and
    when its answer said the limit resets (target seconds on the run's clock, if it said)."""

    sent: float
    answered: float
    outcome: Outcome
    replay: bool
    reset: float | None = None


@dataclass
class _Key:
    watched_since: float
    attempts: list[Attempt] = field(default_factory=list)
    failed: bool = False


@dataclass
class RateBook:
    """Every create of every key the run sent, and the three bounds on them."""

    keys: dict[str, _Key] = field(default_factory=dict)

    def watch(self, role: str, now: float) -> None:
        """Start watching ``role``'s key (the run's start)."""
        self.keys.setdefault(role, _Key(now))

    def attempts(self, role: str) -> list[Attempt]:
        key = self.keys.get(role)
        return list(key.attempts) if key is not None else []

    def record(
        self, role: str, attempt: Attempt, exchange: Exchange, *, counted: bool
    ) -> Iterator[Verdict]:
        """Record one create (``counted``: a ``POST /v1/sessions``, the operation the seed
        limits; other creates only add to what the key sent) and judge it."""
        key = self.keys.setdefault(role, _Key(attempt.sent))
        key.attempts.append(attempt)
        if not counted:
            return
        if attempt.outcome == "limited":
            yield from self._early(key, attempt, exchange)
        elif attempt.outcome == "accepted" and not attempt.replay:
            yield from self._after_refusal(key, attempt, exchange)
            yield from self._span(key, attempt, exchange)
            yield from self._declared(key, attempt, exchange)

    def _fail(self, key: _Key, exchange: Exchange, message: str) -> Verdict:
        if key.failed:
            return Verdict.passed(RATE, exchange, edge=False)
        key.failed = True
        return Verdict.failed(RATE, exchange, message)

    def _early(self, key: _Key, attempt: Attempt, exchange: Exchange) -> Iterator[Verdict]:
        memory = 2 * WINDOW + RATE_SLACK
        if attempt.sent - key.watched_since < memory:
            return  # the key's creates before the run are unknown
        recent = [a for a in key.attempts if a.sent > attempt.answered - memory]
        if len(recent) <= LIMIT:
            yield self._fail(
                key, exchange,
                f"a create was refused rate_limit although the key had sent {len(recent)} "
                f"creates in the last {2 * WINDOW:g} s; no reading of {LIMIT} a minute refuses "
                "that",
            )  # fmt: skip
        else:
            yield Verdict.passed(RATE, exchange, edge=True)

    def _admitted(self, key: _Key, start: float, end: float) -> list[Attempt]:
        return [
            a
            for a in key.attempts
            if a.outcome == "accepted" and not a.replay and start < a.sent <= end
        ]

    def _after_refusal(self, key: _Key, attempt: Attempt, exchange: Exchange) -> Iterator[Verdict]:
        refusals = [
            a
            for a in key.attempts
            if a.outcome == "limited" and a.answered < attempt.sent
            and attempt.sent < a.sent + WINDOW - RATE_SLACK
        ]  # fmt: skip
        for refusal in refusals:
            end = refusal.sent + WINDOW - RATE_SLACK
            admitted = self._admitted(key, refusal.answered, end)
            if len(admitted) > LIMIT:
                yield self._fail(
                    key, exchange,
                    f"{len(admitted)} creates were admitted within "
                    f"{attempt.sent - refusal.answered:.0f} s of a rate_limit refusal; no "
                    f"reading of {LIMIT} a minute admits more than {LIMIT} in the window after "
                    "its limiter was full",
                )  # fmt: skip
                return
            sent = [a for a in key.attempts if refusal.answered < a.sent <= end]
            yield Verdict.passed(RATE, exchange, edge=len(sent) > LIMIT)

    def _declared(self, key: _Key, attempt: Attempt, exchange: Exchange) -> Iterator[Verdict]:
        """The admissions since the last refusal, back to where the declared reset jumped."""
        run: list[Attempt] = []
        for earlier in reversed(key.attempts):
            if earlier.outcome == "limited" or earlier.reset is None:
                break
            if earlier.outcome != "accepted" or earlier.replay:
                continue
            if run and run[-1].reset is not None and run[-1].reset - earlier.reset >= WINDOW / 2:
                break  # the limit reset between the two: a new window began
            run.append(earlier)
        if len(run) <= LIMIT:
            return
        span = run[0].sent - run[-1].sent
        allowed = LIMIT + math.floor(span * LIMIT / WINDOW)
        if len(run) > allowed:
            yield self._fail(
                key, exchange,
                f"{len(run)} creates were admitted in {span:.1f} s with no refusal, and the "
                "reset each answer declared never moved on a window: one window of the seed's "
                f"{LIMIT} a minute admits at most {allowed}",
            )  # fmt: skip

    def _span(self, key: _Key, attempt: Attempt, exchange: Exchange) -> Iterator[Verdict]:
        admitted = self._admitted(key, -math.inf, attempt.sent)
        for index, first in enumerate(admitted):
            span = attempt.sent - first.sent
            allowed = LIMIT * (math.floor((span + RATE_SLACK) / WINDOW) + 2)
            count = len(admitted) - index
            if count > allowed:
                yield self._fail(
                    key, exchange,
                    f"{count} creates were admitted within {span:.0f} s; {LIMIT} a minute "
                    f"admits at most {allowed} in a span touching "
                    f"{math.floor((span + RATE_SLACK) / WINDOW) + 2} windows",
                )  # fmt: skip
                return


def declared_reset(exchange: Exchange, at: float) -> float | None:
    """When the answer says the rate limit resets, on the run's clock: ``X-RateLimit-Reset`` as
    seconds from now (added to ``at``) or as an absolute time (kept as it is: only differences
    between two answers are read)."""
    raw = (exchange.headers.get("x-ratelimit-reset") or "").split(",")[0].split(";")[0].strip()
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value >= 1_000_000_000 else at + value
