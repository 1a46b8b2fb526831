"""What the runner's clients record while a scenario runs: logs as columns, and tallies.

Why the client keeps its own log instead of reading the platform's API log: only the client
knows which attempt a request was, whether it was a retry, what it waited and why. The platform's
log stays the service's view; this one is the customer's.

Why columns: a month has a million clients and more requests; each is appended as raw values
(``CallLog``, ``ClientLog``) and read back as the flat immutable records ``CallRecord`` and
``ClientRecord``, or taken in bulk by the collector. With ``records: summary`` no log is kept at
all: ``Tallies`` counts requests and clients per interval, which is all the summary tables need,
in memory that grows with the number of intervals, not of clients. When the logs are kept, the
same tallies are counted from them in bulk when read (``Tallies.of``) instead of once more per
request.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from sim.columns import Column, Interner, Table

__all__ = [
    "CallLog",
    "CallRecord",
    "CallRecorder",
    "ClientLog",
    "ClientRecord",
    "ClientRecorder",
    "Tallies",
]

_NAN = math.nan


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One request a scenario client made, and how the service answered it."""

    at: float  # simulated seconds
    client: int  # the arrival that made it
    operation: str  # contract operationId, or ``createSession`` for every session surface
    surface: str | None  # billing surface of a session create
    organization: str
    org_id: str
    key: int  # index of the organization's key used
    attempt: int  # 1 for the first try
    outcome: str  # "ok", "replayed" or the error code
    error_type: str | None
    retry_after: float | None
    delay: float | None  # what the client waited before its next attempt (None: it gave up)
    idempotency_key: str | None
    resource_id: str | None  # the session or run created


@dataclass(frozen=True, slots=True)
class ClientRecord:
    """One arrival: what it wanted and how far it got."""

    client: int
    at: float
    kind: str  # "session" or "run"
    organization: str
    surface: str | None
    quality: str | None
    model: str | None
    planned_length: float | None  # seconds the client meant to keep the session running
    attempts: int
    resource_id: str | None  # None when every attempt was refused
    final_outcome: str


#: Records one request: ``CallLog.append`` or ``Tallies.request`` (the fields of ``CallRecord``).
CallRecorder = Callable[
    [float, int, str, str | None, str, str, int, int, str, str | None, float | None,
     float | None, str | None, str | None],
    None,
]  # fmt: skip
#: Records one arrival: ``ClientLog.append`` or ``Tallies.arrival`` (the fields of
#: ``ClientRecord``).
ClientRecorder = Callable[
    [int, float, str, str, str | None, str | None, str | None, float | None, int, str | None, str],
    None,
]


def _floats(values: array[float]) -> np.ndarray[Any, Any]:
    return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)


def _ints(values: array[int]) -> np.ndarray[Any, Any]:
    return np.asarray(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)


def _labels(
    values: list[tuple[str, str]],
) -> tuple[list[tuple[str, str]], np.ndarray[Any, Any]]:
    """The distinct ``values`` (in first-seen order) and, per value, the index of its own."""
    index: dict[tuple[str, str], int] = {}
    label = [index.setdefault(value, len(index)) for value in values]
    return list(index) or [("", "")], np.array(label, dtype=np.int64)


def _optional(value: float) -> float | None:
    return None if math.isnan(value) else value


#: The fields of a request kept together as one interned tuple, in their order.
_CALL_KINDS = ("operation", "surface", "organization", "org_id", "outcome", "error_type")


class CallLog:
    """Every request, in the order made: numbers in typed arrays, strings by reference."""

    def __init__(self) -> None:
        self.at = array("d")
        self.client = array("I")
        self.key = array("I")
        self.attempt = array("I")
        #: Retry-After and the wait before the next attempt, by row: only refusals have them,
        #: so an answered request appends nothing for them (``retry_afters``, ``delays``).
        self.retry_after: dict[int, float] = {}
        self.delay: dict[int, float] = {}
        # (operation, surface, organization, org_id, outcome, error_type): few combinations
        self._kinds: Interner[tuple[str, str | None, str, str, str, str | None]] = Interner()
        self.kinds = self._kinds.values
        self.kind = array("I")
        self.idempotency_key: list[str | None] = []
        self.resource_id: list[str | None] = []

    def append(
        self,
        at: float,
        client: int,
        operation: str,
        surface: str | None,
        organization: str,
        org_id: str,
        key: int,
        attempt: int,
        outcome: str,
        error_type: str | None,
        retry_after: float | None,
        delay: float | None,
        idempotency_key: str | None,
        resource_id: str | None,
    ) -> None:
        """Append one request (the fields of ``CallRecord``, in its order)."""
        self.at.append(at)
        self.client.append(client)
        self.key.append(key)
        self.attempt.append(attempt)
        if retry_after is not None or delay is not None:  # a refusal
            row = len(self.at) - 1
            if retry_after is not None:
                self.retry_after[row] = retry_after
            if delay is not None:
                self.delay[row] = delay
        kind = (operation, surface, organization, org_id, outcome, error_type)
        self.kind.append(self._kinds.code(kind))
        self.idempotency_key.append(idempotency_key)
        self.resource_id.append(resource_id)

    def __getitem__(self, index: int) -> CallRecord:
        index = range(len(self.at))[index]  # from the end when negative (the sparse columns' row)
        operation, surface, organization, org_id, outcome, error_type = self.kinds[self.kind[index]]
        return CallRecord(
            at=self.at[index],
            client=self.client[index],
            operation=operation,
            surface=surface,
            organization=organization,
            org_id=org_id,
            key=self.key[index],
            attempt=self.attempt[index],
            outcome=outcome,
            error_type=error_type,
            retry_after=self.retry_after.get(index),
            delay=self.delay.get(index),
            idempotency_key=self.idempotency_key[index],
            resource_id=self.resource_id[index],
        )

    def __iter__(self) -> Iterator[CallRecord]:
        return (self[i] for i in range(len(self.at)))

    def export(self) -> Table:
        """Every request in the order made, one column per field of ``CallRecord`` (its
        strings of few values as categories, ``at`` a time, ``retry_after`` and ``delay``
        floats, NaN where there is none)."""
        kinds = self.kinds
        columns = {
            "at": Column("time", self.at),
            "client": Column("int", self.client),
            **{
                name: Column("category", self.kind, labels=[k[index] for k in kinds])
                for index, name in enumerate(_CALL_KINDS[:4])
            },
            "key": Column("int", self.key),
            "attempt": Column("int", self.attempt),
            **{
                name: Column("category", self.kind, labels=[k[index] for k in kinds])
                for index, name in enumerate(_CALL_KINDS[4:], start=4)
            },
            "retry_after": Column("float", self.retry_after),
            "delay": Column("float", self.delay),
            "idempotency_key": Column("text", self.idempotency_key),
            "resource_id": Column("text", self.resource_id),
        }
        return Table(len(self.at), columns)

    def __len__(self) -> int:
        return len(self.at)


class ClientLog:
    """Every arrival, in the order each finished its creates."""

    def __init__(self) -> None:
        self.client = array("I")
        self.at = array("d")
        self.planned_length = array("d")  # NaN: none
        self.attempts = array("I")
        # (kind, organization, surface, quality, model, final outcome): few combinations
        self._kinds: Interner[tuple[str, str, str | None, str | None, str | None, str]] = Interner()
        self.kinds = self._kinds.values
        self.kind = array("I")
        self.resource_id: list[str | None] = []

    def append(
        self,
        client: int,
        at: float,
        kind: str,
        organization: str,
        surface: str | None,
        quality: str | None,
        model: str | None,
        planned_length: float | None,
        attempts: int,
        resource_id: str | None,
        final_outcome: str,
    ) -> None:
        """Append one arrival (the fields of ``ClientRecord``, in its order)."""
        self.client.append(client)
        self.at.append(at)
        self.planned_length.append(_NAN if planned_length is None else planned_length)
        self.attempts.append(attempts)
        kinds = (kind, organization, surface, quality, model, final_outcome)
        self.kind.append(self._kinds.code(kinds))
        self.resource_id.append(resource_id)

    def __getitem__(self, index: int) -> ClientRecord:
        kind, organization, surface, quality, model, outcome = self.kinds[self.kind[index]]
        return ClientRecord(
            client=self.client[index],
            at=self.at[index],
            kind=kind,
            organization=organization,
            surface=surface,
            quality=quality,
            model=model,
            planned_length=_optional(self.planned_length[index]),
            attempts=self.attempts[index],
            resource_id=self.resource_id[index],
            final_outcome=outcome,
        )

    def __iter__(self) -> Iterator[ClientRecord]:
        return (self[i] for i in range(len(self.client)))

    def export(self) -> Table:
        """Every arrival in the order each finished its creates, one column per field of
        ``ClientRecord`` (its strings of few values as categories, ``at`` a time,
        ``planned_length`` NaN where there is none)."""
        kinds = self.kinds

        def labelled(index: int) -> Column:
            return Column("category", self.kind, labels=[k[index] for k in kinds])

        columns = {
            "client": Column("int", self.client),
            "at": Column("time", self.at),
            "kind": labelled(0),
            "organization": labelled(1),
            "surface": labelled(2),
            "quality": labelled(3),
            "model": labelled(4),
            "planned_length": Column("float", self.planned_length),
            "attempts": Column("int", self.attempts),
            "resource_id": Column("text", self.resource_id),
            "final_outcome": labelled(5),
        }
        return Table(len(self.client), columns)

    def __len__(self) -> int:
        return len(self.client)


class Tallies:
    """Requests and arrivals counted per interval of ``interval`` seconds.

    ``calls[(interval, operation, outcome, attempt == 1)]`` counts requests;
    ``clients[(interval, kind, final outcome)]`` counts arrivals (by the interval they arrived
    in) and ``attempts[...]`` the attempts they made.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.calls: Counter[tuple[int, str, str, bool]] = Counter()
        self.clients: Counter[tuple[int, str, str]] = Counter()
        self.attempts: Counter[tuple[int, str, str]] = Counter()

    @classmethod
    def of(cls, interval: float, calls: CallLog, clients: ClientLog) -> Tallies:
        """The tallies of the requests and arrivals in ``calls`` and ``clients``: what ``request``
        and ``arrival`` would have counted, one by one, as they were made."""
        tallies = cls(interval)
        # Counted in bulk: each record's interned code is mapped to the labels it is tallied by,
        # and the records are counted on one integer key (interval, labels, first attempt).
        # NumPy's floor division of floats is Python's; a month has hundreds of thousands of
        # records for a few thousand keys.
        labels, label = _labels([(kind[0], kind[4]) for kind in calls.kinds])
        slots = np.floor_divide(_floats(calls.at), interval).astype(np.int64)
        keys = (slots * len(labels) + label[_ints(calls.kind)]) * 2 + (_ints(calls.attempt) == 1)
        unique, counts = np.unique(keys, return_counts=True)
        for key, count in zip(unique.tolist(), counts.tolist(), strict=True):
            rest, first = divmod(key, 2)
            slot, code = divmod(rest, len(labels))
            operation, outcome = labels[code]
            tallies.calls[(slot, operation, outcome, first == 1)] = count
        labels, label = _labels([(kind[0], kind[5]) for kind in clients.kinds])
        slots = np.floor_divide(_floats(clients.at), interval).astype(np.int64)
        unique, where = np.unique(
            slots * len(labels) + label[_ints(clients.kind)], return_inverse=True
        )
        counts = np.bincount(where, minlength=len(unique))
        attempts = np.zeros(len(unique), dtype=np.int64)
        np.add.at(attempts, where, _ints(clients.attempts))
        for key, count, tries in zip(
            unique.tolist(), counts.tolist(), attempts.tolist(), strict=True
        ):
            slot, code = divmod(key, len(labels))
            kind, outcome = labels[code]
            tallies.clients[(slot, kind, outcome)] = count
            tallies.attempts[(slot, kind, outcome)] = tries
        return tallies

    def request(
        self,
        at: float,
        client: int,
        operation: str,
        surface: str | None,
        organization: str,
        org_id: str,
        key: int,
        attempt: int,
        outcome: str,
        error_type: str | None,
        retry_after: float | None,
        delay: float | None,
        idempotency_key: str | None,
        resource_id: str | None,
    ) -> None:
        """Count one request made at ``at``: ``CallLog.append``'s signature, so that a client
        records a request with one call whether the run keeps the log or only these tallies."""
        calls = self.calls
        bucket = (int(at // self.interval), operation, outcome, attempt == 1)
        calls[bucket] = calls.get(bucket, 0) + 1

    def arrival(
        self,
        client: int,
        at: float,
        kind: str,
        organization: str,
        surface: str | None,
        quality: str | None,
        model: str | None,
        planned_length: float | None,
        attempts: int,
        resource_id: str | None,
        final_outcome: str,
    ) -> None:
        """Count one arrival at ``at`` and its attempts: ``ClientLog.append``'s signature (see
        ``request``)."""
        clients, tried = self.clients, self.attempts
        bucket = (int(at // self.interval), kind, final_outcome)
        clients[bucket] = clients.get(bucket, 0) + 1
        tried[bucket] = tried.get(bucket, 0) + attempts

    def export(self) -> tuple[Table, Table]:
        """The tallies as two tables, rows sorted by their keys: ``requests`` (``interval``,
        ``operation``, ``outcome``, ``first_attempt``, ``requests``) and ``arrivals``
        (``interval``, ``kind``, ``final_outcome``, ``clients``, ``attempts``)."""
        calls = sorted(self.calls)
        arrivals = sorted(self.clients)
        requests = Table(
            len(calls),
            {
                "interval": Column("int", [key[0] for key in calls]),
                "operation": Column("text", [key[1] for key in calls]),
                "outcome": Column("text", [key[2] for key in calls]),
                "first_attempt": Column("bool", [key[3] for key in calls]),
                "requests": Column("int", [self.calls[key] for key in calls]),
            },
        )
        clients = Table(
            len(arrivals),
            {
                "interval": Column("int", [key[0] for key in arrivals]),
                "kind": Column("text", [key[1] for key in arrivals]),
                "final_outcome": Column("text", [key[2] for key in arrivals]),
                "clients": Column("int", [self.clients[key] for key in arrivals]),
                "attempts": Column("int", [self.attempts[key] for key in arrivals]),
            },
        )
        return requests, clients
