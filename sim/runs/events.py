"""The event list of one run (RES-RUN-4, EP-RUN-2, GAP-RUN-5).

Every state change and output part of a run appends one ``RunEvent`` with the next ``sequence``
(1, 2, 3, … with no gap), so a client can resume with ``starting_after=<last sequence>`` and
never miss or repeat an event. ``part_id`` is ``run`` for lifecycle events and ``part_<n>`` for
output parts. Deleting the run redacts the output parts' data (their content is purged) but keeps
every event, so the sequence stays gap-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.errors import Unprocessable
from sim.ids import IdFactory
from sim.pagination import page_at

__all__ = ["LIFECYCLE_PART", "RunEvent", "RunEventLog"]

LIFECYCLE_PART = "run"


@dataclass(frozen=True, slots=True)
class RunEvent:
    id: str
    sequence: int
    type: str
    part_id: str
    data: Mapping[str, Any]
    at: float  # simulated seconds

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "id": self.id,
            "sequence": self.sequence,
            "type": self.type,
            "part_id": self.part_id,
            "data": dict(self.data),
            "created_at": clock.timestamp(self.at),
        }


class RunEventLog:
    def __init__(self, clock: Clock, ids: IdFactory) -> None:
        self._clock = clock
        self._ids = ids
        self._events: list[RunEvent] = []

    def append(
        self, type_: str, data: Mapping[str, Any], part_id: str = LIFECYCLE_PART
    ) -> RunEvent:
        event = RunEvent(
            id=self._ids.new("event"),
            sequence=len(self._events) + 1,
            type=type_,
            part_id=part_id,
            data=MappingProxyType(dict(data)),
            at=self._clock.now,
        )
        self._events.append(event)
        return event

    def redact_outputs(self) -> None:
        """Empty the data of every output-part event (the run's content is being purged)."""
        self._events = [
            replace(e, data=MappingProxyType({})) if e.part_id != LIFECYCLE_PART else e
            for e in self._events
        ]

    @property
    def events(self) -> tuple[RunEvent, ...]:
        return tuple(self._events)

    def page(self, *, starting_after: int | None, limit: int) -> dict[str, Any]:
        """Events with ``sequence > starting_after``, ascending; ``next_cursor`` is the last
        sequence returned (an integer), omitted when the page is empty and nothing follows."""
        offset = 0 if starting_after is None else starting_after
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise Unprocessable(
                "validation.range",
                "starting_after must be an integer >= 0.",
                param="starting_after",
            )
        # Sequences are dense from 1, so the sequence is also the list index + 1.
        return page_at(
            self._events,
            offset,
            limit=limit,
            cursor_of=lambda e: e.sequence,
            render=lambda e: e.to_resource(self._clock),
        )
