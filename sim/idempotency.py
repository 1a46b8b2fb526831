"""Idempotent creates (LIM-5, LIM-6, GAP-LIM-2).

A store of successful create outcomes keyed by (organization, Idempotency-Key). Two requests are
the same when their operation and the canonical JSON of their values are, so the same key with the
same body replays the original outcome (no second resource, no second charge) and the same key
with another body is a conflict. Entries live for the configured window on the virtual clock.
Only successes are stored: a retry after a refusal is a new attempt. ``sim.platform`` looks a key
up before the rate limiter (a replay is not a new request) and stores the outcome inside the
operation's unit of work, so an operation that fails after storing it leaves no entry behind
(``forget``).

The fingerprint is an exact snapshot of the request (``marshal``), a fast path beside its
reference, the canonical text itself (``fingerprint_by_text``; ``make bench`` prints what it
saves a month): the canonical texts are needed only when a key comes back with a request whose
snapshot differs (``same_request``; a property test holds it to comparing canonical JSON).

An outcome is stored as its body or as a function that renders the body (``Renderer``): a caller
that reads no body (the scenario's clients) is answered only the created resource's id, and the
body a replay must give is then rendered from the platform's records when, if ever, the key comes
back (``lookup``), once. Either way a replay gives the body the first request's full answer had.

Memory: entries are stored in time order, and every store first drops the entries whose window
has passed, so the store holds one window of creates however long the run.
"""

from __future__ import annotations

import json
import marshal
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from sim import tuples
from sim.clock import Clock
from sim.config import LimitsConfig
from sim.errors import Conflict, Unprocessable

__all__ = [
    "Body",
    "IdempotencyStore",
    "Renderer",
    "Replay",
    "canonical_json",
    "fingerprint",
    "fingerprint_by_text",
    "same_request",
]

#: Renders, on demand, the body an operation answered (always the same body: what it renders
#: never changes after the operation).
Renderer = Callable[[], dict[str, Any]]
#: An outcome as stored: the body, or what renders it.
Body = dict[str, Any] | Renderer


#: marshal's format 2: no back-references, so a snapshot does not depend on how many references
#: to its strings exist elsewhere.
_MARSHAL_VERSION = 2


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a request's values: keys sorted, no spaces, Unicode as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(operation: str, values: Any) -> bytes:
    """An exact snapshot of a request (its operation and JSON ``values``), for ``same_request``.

    A value of a subclass of a JSON type (which only a Python caller can send, and which marshal
    refuses) is snapshotted as the plain JSON value it stands for."""
    try:
        return marshal.dumps((operation, values), _MARSHAL_VERSION)
    except ValueError:
        plain = json.loads(canonical_json(values))
        return marshal.dumps((operation, plain), _MARSHAL_VERSION)


def fingerprint_by_text(operation: str, values: Any) -> bytes:
    """``fingerprint``'s reference: the canonical text of the request, which is the same for
    the same request (compared by equality alone: ``same_request_by_text``)."""
    return canonical_json([operation, values]).encode()


def same_request_by_text(first: bytes, second: bytes) -> bool:
    """``same_request`` for fingerprints made by ``fingerprint_by_text``."""
    return first == second


def same_request(first: bytes, second: bytes) -> bool:
    """Whether two fingerprints are of the same request: the same operation, and values whose
    canonical JSON is the same (the order of keys aside, ``1`` is not ``1.0`` nor ``true``).

    Equal snapshots are equal values of equal types, hence the same JSON (a retry almost always
    sends the same values in the same order); otherwise the canonical texts decide."""
    return first == second or canonical_json(marshal.loads(first)) == canonical_json(
        marshal.loads(second)
    )


class Replay(NamedTuple):
    """A stored outcome: the JSON body first returned and when it was stored."""

    body: dict[str, Any]
    stored_at: float


class _Entry(NamedTuple):
    fingerprint: bytes
    body: Body  # the body, or its renderer until a replay renders it
    stored_at: float


class IdempotencyStore:
    def __init__(self, clock: Clock, limits: LimitsConfig) -> None:
        self._clock = clock
        self._limits = limits
        #: The configured bounds: every keyed create looks up and stores.
        self._window = limits.idempotency_window_seconds
        self._shortest = limits.idempotency_key_min_length
        self._longest = limits.idempotency_key_max_length
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._order: deque[tuple[float, tuple[str, str]]] = deque()  # (stored at, key)

    def __len__(self) -> int:
        return len(self._entries)

    def validate_key(self, key: str) -> None:
        if not isinstance(key, str) or not self._shortest <= len(key) <= self._longest:
            raise Unprocessable(
                "idempotency_key.invalid",
                f"Idempotency-Key must be {self._shortest} to {self._longest} characters.",
                param="Idempotency-Key",
            )

    def lookup(
        self, org_id: str, key: str, operation: str, body: Any, *, digest: bytes | None = None
    ) -> Replay | None:
        """The stored outcome for this key and body, ``None`` if new; ``Conflict`` if reused.

        ``digest``: the request's ``fingerprint``, when the caller has it already."""
        self.validate_key(key)
        entry = self._entries.get((org_id, key))
        if entry is None:
            return None
        if self._clock.now - entry.stored_at >= self._window:
            del self._entries[(org_id, key)]
            return None
        if not same_request(entry.fingerprint, digest or fingerprint(operation, body)):
            raise Conflict(
                "idempotency_key.reused",
                "This Idempotency-Key was already used with a different request.",
                param="Idempotency-Key",
            )
        return Replay(self._rendered((org_id, key), entry), entry.stored_at)

    def _rendered(self, place: tuple[str, str], entry: _Entry) -> dict[str, Any]:
        """The entry's body, rendered now if it was stored as its renderer (and kept so)."""
        if callable(entry.body):
            body = entry.body()
            self._entries[place] = entry._replace(body=body)
            return body
        return entry.body

    def replays(self) -> list[tuple[tuple[str, str], bytes, Replay]]:
        """Every entry as a replay would give it: (organization, key), fingerprint, replay; in
        the order stored (each body rendered now if it was stored as its renderer)."""
        return [
            (place, entry.fingerprint, Replay(self._rendered(place, entry), entry.stored_at))
            for place, entry in list(self._entries.items())
        ]

    def store(
        self,
        org_id: str,
        key: str,
        operation: str,
        body: Any,
        result: Body,
        *,
        digest: bytes | None = None,
    ) -> None:
        """Store the outcome ``result`` (the body, or its ``Renderer``) of a request with the
        values ``body`` (``digest``: their fingerprint, when the caller has it already)."""
        now = self._clock.now
        order = self._order
        if order and order[0][0] <= now - self._window:
            self._expire(now)
        entry = tuples.new(_Entry, (digest or fingerprint(operation, body), result, now))
        place = (org_id, key)
        self._entries[place] = entry
        order.append((now, place))

    def forget(self, org_id: str, key: str) -> None:
        """Drop the outcome just stored for ``key`` (the operation that stored it failed after
        all): the entry and its place in the expiry order, as if ``store`` had not run."""
        if self._entries.pop((org_id, key), None) is not None:
            order = self._order
            if order and order[-1][1] == (org_id, key):
                order.pop()

    def _expire(self, now: float) -> None:
        """Drop the entries whose window has passed (oldest first)."""
        horizon = now - self._window
        order, entries = self._order, self._entries
        while order and order[0][0] <= horizon:
            stored_at, key = order.popleft()
            entry = entries.get(key)
            if entry is not None and entry.stored_at == stored_at:
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
