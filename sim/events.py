"""The append-only event log of the service (GAP-EV-1).

Every lifecycle change (sessions, avatars, runs, billing) appends one ``Event``. Subscribers
(the webhook dispatcher, scenario collectors) are called synchronously in append order, so what
they see is as deterministic as the log itself.

An event emitted inside an operation (``Journal.atomic``) takes its id and time when it is
emitted but is appended and published only when the operation succeeds: a create that fails
half-way announces nothing (``sim.journal``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.ids import IdFactory
from sim.journal import Journal

__all__ = ["Event", "EventLog", "Subscriber"]


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    type: str
    org_id: str
    at: float  # simulated seconds
    created_at: str  # ISO-8601 form of ``at``
    data: Mapping[str, Any]

    def to_payload(self) -> dict[str, Any]:
        """The JSON shape sent to webhooks: ``{id, type, created_at, data}``."""
        return {
            "id": self.id,
            "type": self.type,
            "created_at": self.created_at,
            "data": dict(self.data),
        }


Subscriber = Callable[[Event], None]


class EventLog:
    def __init__(self, clock: Clock, ids: IdFactory, journal: Journal | None = None) -> None:
        self._clock = clock
        self._ids = ids
        self._journal = journal if journal is not None else Journal()
        self._events: list[Event] = []
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def emit(self, type_: str, org_id: str, data: Mapping[str, Any]) -> Event:
        event = Event(
            id=self._ids.new("event"),
            type=type_,
            org_id=org_id,
            at=self._clock.now,
            created_at=self._clock.timestamp(),
            data=MappingProxyType(dict(data)),
        )
        self._journal.defer(lambda: self._publish(event))
        return event

    def _publish(self, event: Event) -> None:
        self._events.append(event)
        for subscriber in self._subscribers:
            subscriber(event)

    def __iter__(self) -> Iterator[Event]:
        return iter(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def of_type(self, type_: str) -> list[Event]:
        return [e for e in self._events if e.type == type_]

    def for_org(self, org_id: str) -> list[Event]:
        return [e for e in self._events if e.org_id == org_id]
