"""The idempotency table: ``Idempotency-Key`` → the request it first came with and its answer.

Why a table of the run's own: within 24 hours the seed makes a keyed create a function of its
key and body. The same key and body return the original response: the same status and the same
resource (its id, its creation time, what it was created with), and nothing else is made. The same
key with another body is 409 ``conflict``. After 24 hours the key is free again.

Which requests share a key's space is the deployment's (an organization, a key); the run only
ever reuses a key with the key that first sent it, or with another organization's key, where the
answer must never be the first organization's resource (``tenant_isolation`` judges that). A
first answer that was not a success is not kept: a retry after a refusal is a new attempt under
any reading. A replay refused ``rate_limit`` is not judged (the limiter may stand before the
table); any other refusal of a replay is not the original response.

That nothing else was made is judged elsewhere, from the lists: ``creates_answered_once`` (every
create carries a nonce in its metadata, and each nonce must name one resource, the one answered).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["IDEMPOTENCY", "IdempotencyTable"]

IDEMPOTENCY = model_rule("idempotent_replay")

#: Fields of a created resource that a replay must answer as the original did.
_FIXED = ("id", "created_at", "avatar_id", "quality", "metadata", "model")
#: Target seconds of slack on either side of the 24-hour window.
WINDOW_SLACK = 60.0


def fingerprint(method: str, path: str, body: Any) -> str:
    """The request as a key's first use is remembered: method, path and canonical JSON."""
    return json.dumps([method, path, body], sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class _Entry:
    fingerprint: str
    status: int
    answer: dict[str, Any]
    at: float
    exchange: Exchange


@dataclass
class IdempotencyTable:
    """The first successful use of every key, by (organization, method and path, key)."""

    entries: dict[tuple[str, str, str], _Entry] = field(default_factory=dict)
    #: Whether a key was seen past its window (the rule's last clause was exercised).
    expired_seen: bool = False

    def is_replay(self, org: str, method: str, path: str, key: str, body: Any, at: float) -> bool:
        entry = self.entries.get((org, f"{method} {path}", key))
        return (
            entry is not None
            and entry.fingerprint == fingerprint(method, path, body)
            and at - entry.at <= SEED.idempotency_window_seconds
        )

    def judge(
        self,
        org: str,
        method: str,
        path: str,
        key: str,
        body: Any,
        body_valid: bool,
        exchange: Exchange,
        sent: float,
    ) -> Iterator[Verdict]:
        """One keyed create (by ``org``'s key) answered ``exchange``."""
        slot = (org, f"{method} {path}", key)
        entry = self.entries.get(slot)
        ok = 200 <= exchange.status < 300
        answer = exchange.json()
        window = SEED.idempotency_window_seconds
        if entry is not None and sent - entry.at > window + WINDOW_SLACK:
            self.expired_seen = True
            if exchange.status == 409:
                yield Verdict.failed(
                    IDEMPOTENCY, exchange,
                    f"an Idempotency-Key first used {sent - entry.at:.0f} s ago (past the "
                    f"{window:g} s window) still answered 409",
                )  # fmt: skip
            else:
                yield Verdict.passed(IDEMPOTENCY, exchange)
            entry = None
            del self.entries[slot]
        if entry is None or sent - entry.at < -WINDOW_SLACK:
            if ok and isinstance(answer, dict):
                self.entries[slot] = _Entry(
                    fingerprint(method, path, body), exchange.status, answer, sent, exchange
                )
            return
        if sent - entry.at > window - WINDOW_SLACK:
            return  # at the window's edge: either answer is legal
        if entry.fingerprint == fingerprint(method, path, body):
            yield from self._replay(entry, exchange, answer)
        else:
            yield from self._other_body(exchange, body_valid)

    @staticmethod
    def _replay(entry: _Entry, exchange: Exchange, answer: Any) -> Iterator[Verdict]:
        error = answer.get("error") if isinstance(answer, dict) else None
        if exchange.status == 429 and isinstance(error, dict) and error.get("type") == "rate_limit":
            return
        if exchange.status != entry.status or not isinstance(answer, dict):
            yield Verdict.failed(
                IDEMPOTENCY, exchange,
                f"a replay (same Idempotency-Key and body) answered {exchange.status}; the "
                f"original answer was {entry.status}",
            )  # fmt: skip
            return
        original = entry.answer.get("session", entry.answer)
        now = answer.get("session", answer)
        differs = [
            name
            for name in _FIXED
            if isinstance(original, dict) and isinstance(now, dict) and name in original
            and now.get(name) != original[name]
        ]  # fmt: skip
        if differs:
            shown = ", ".join(f"{n} {now.get(n)!r} (was {original[n]!r})" for n in differs[:3])
            yield Verdict.failed(
                IDEMPOTENCY, exchange,
                f"a replay (same Idempotency-Key and body) answered another resource: {shown}",
            )  # fmt: skip
            return
        yield Verdict.passed(IDEMPOTENCY, exchange)

    @staticmethod
    def _other_body(exchange: Exchange, body_valid: bool) -> Iterator[Verdict]:
        if exchange.status == 409:
            yield Verdict.passed(IDEMPOTENCY, exchange)
        elif 200 <= exchange.status < 300:
            yield Verdict.failed(
                IDEMPOTENCY, exchange,
                f"an Idempotency-Key reused with another body answered {exchange.status}; the "
                "seed answers 409 conflict",
            )  # fmt: skip
        elif body_valid and exchange.status not in (429, 503):
            yield Verdict.failed(
                IDEMPOTENCY, exchange,
                f"an Idempotency-Key reused with another (valid) body answered "
                f"{exchange.status}, not 409 conflict",
            )  # fmt: skip
