"""Idempotent creates (LIM-5, LIM-6, GAP-LIM-2).

A store of successful create outcomes keyed by (organization, Idempotency-Key). The fingerprint is
the operation and the canonical JSON of the request body, so the same key with the same body
replays the original outcome (no second resource, no second charge) and the same key with another
body is a conflict. Entries live for the configured window on the virtual clock. Only successes
are stored: a retry after a refusal is a new attempt. ``sim.platform`` looks a key up before the
rate limiter (a replay is not a new request) and stores the outcome inside the operation's unit of
work, so an operation that fails after storing it leaves no entry behind (``forget``).

Memory: entries are stored in time order, and every store first drops the entries whose window
has passed, so the store holds one window of creates however long the run.
"""

from __future__ import annotations

from _json import encode_basestring, make_encoder
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from sim.clock import Clock
from sim.config import LimitsConfig
from sim.errors import Conflict, Unprocessable

__all__ = ["IdempotencyStore", "Replay", "canonical_json", "fingerprint"]


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


#: ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``, built once:
#: ``dumps`` with options builds a ``JSONEncoder`` and this same C encoder on every call, which
#: cost more than the encoding of a create's body itself. No circular-reference bookkeeping:
#: a request's values have passed ``sim.values.check_values`` (whose depth bound refuses a
#: cycle) before they are fingerprinted.
_CANONICAL = make_encoder(None, _not_json, encode_basestring, None, ":", ",", True, False, True)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a request's values: keys sorted, no spaces, Unicode as is
    (a property test holds it to ``json.dumps`` with those options)."""
    return "".join(_CANONICAL(value, 0))


def fingerprint(operation: str, body: Any) -> str:
    """What makes two requests the same: the operation and the canonical JSON of its values.

    The text itself, not a hash of it: comparing it is exact, and an entry keeps it only while
    it keeps the (larger) answer it replays."""
    return f"{operation}\n{canonical_json(body)}"


class Replay(NamedTuple):
    """A stored outcome: the JSON body first returned and when it was stored."""

    body: dict[str, Any]
    stored_at: float


# NamedTuples rather than frozen dataclasses: as immutable, and built for every keyed create
# without a frozen dataclass's one ``object.__setattr__`` per field.
class _Entry(NamedTuple):
    fingerprint: str
    replay: Replay


class IdempotencyStore:
    def __init__(self, clock: Clock, limits: LimitsConfig) -> None:
        self._clock = clock
        self._limits = limits
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._order: deque[tuple[float, tuple[str, str]]] = deque()  # (stored at, key)

    def __len__(self) -> int:
        return len(self._entries)

    def validate_key(self, key: str) -> None:
        if not isinstance(key, str) or not (
            self._limits.idempotency_key_min_length
            <= len(key)
            <= self._limits.idempotency_key_max_length
        ):
            raise Unprocessable(
                "idempotency_key.invalid",
                f"Idempotency-Key must be {self._limits.idempotency_key_min_length} to "
                f"{self._limits.idempotency_key_max_length} characters.",
                param="Idempotency-Key",
            )

    def lookup(
        self, org_id: str, key: str, operation: str, body: Any, *, digest: str | None = None
    ) -> Replay | None:
        """The stored outcome for this key and body, ``None`` if new; ``Conflict`` if reused.

        ``digest``: the request's ``fingerprint``, when the caller has it already."""
        self.validate_key(key)
        entry = self._entries.get((org_id, key))
        if entry is None:
            return None
        if self._clock.now - entry.replay.stored_at >= self._limits.idempotency_window_seconds:
            del self._entries[(org_id, key)]
            return None
        if entry.fingerprint != (digest or fingerprint(operation, body)):
            raise Conflict(
                "idempotency_key.reused",
                "This Idempotency-Key was already used with a different request.",
                param="Idempotency-Key",
            )
        return entry.replay

    def store(
        self,
        org_id: str,
        key: str,
        operation: str,
        body: Any,
        result: dict[str, Any],
        *,
        digest: str | None = None,
    ) -> None:
        now = self._clock.now
        self._expire(now)
        entry = _Entry(digest or fingerprint(operation, body), Replay(body=result, stored_at=now))
        self._entries[(org_id, key)] = entry
        self._order.append((now, (org_id, key)))

    def forget(self, org_id: str, key: str) -> None:
        """Drop the outcome just stored for ``key`` (the operation that stored it failed after
        all): the entry and its place in the expiry order, as if ``store`` had not run."""
        if self._entries.pop((org_id, key), None) is not None:
            order = self._order
            if order and order[-1][1] == (org_id, key):
                order.pop()

    def _expire(self, now: float) -> None:
        """Drop the entries whose window has passed (oldest first)."""
        horizon = now - self._limits.idempotency_window_seconds
        order, entries = self._order, self._entries
        while order and order[0][0] <= horizon:
            stored_at, key = order.popleft()
            entry = entries.get(key)
            if entry is not None and entry.replay.stored_at == stored_at:
                del entries[key]

    def run(
        self,
        org_id: str,
        key: str | None,
        operation: str,
        body: Any,
        create: Callable[[], dict[str, Any]],
    ) -> tuple[dict[str, Any], bool]:
        """Call ``create`` at most once per key and body; returns (body, replayed)."""
        if key is None:
            return create(), False
        digest = fingerprint(operation, body)
        replay = self.lookup(org_id, key, operation, body, digest=digest)
        if replay is not None:
            return replay.body, True
        result = create()
        self.store(org_id, key, operation, body, result, digest=digest)
        return result, False
