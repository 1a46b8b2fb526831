"""The event list of one run (RES-RUN-4, EP-RUN-2, GAP-RUN-5).

Every state change and output part of a run appends one ``RunEvent`` with the next ``sequence``
(1, 2, 3, … with no gap), so a client can resume with ``starting_after=<last sequence>`` and
never miss or repeat an event. ``part_id`` is ``run`` for lifecycle events and ``part_<n>`` for
output parts. Deleting the run redacts the output parts' data (their content is purged) but keeps
every event, so the sequence stays gap-free.

Why raw values: a month's runs append millions of events, read by few clients, so each is kept
as the values it is rendered from, one after another in one list (the random bits of its id, its
type, part and time, and the data it was given, owned by the log and never changed: payloads
that recur, such as a progress point, are one shared object; an output part's data is rendered
from its item), and ``RunEvent`` is built when it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from sim.clock import Clock
from sim.errors import Unprocessable
from sim.ids import IdFactory, format_id
from sim.pagination import page_at

__all__ = ["LIFECYCLE_PART", "RunEvent", "RunEventLog"]

LIFECYCLE_PART = "run"
_REDACTED: Mapping[str, Any] = MappingProxyType({})


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


class Rendered(Protocol):
    """Data kept as the record it is rendered from (an output item)."""

    def to_resource(self) -> dict[str, Any]: ...


#: The values kept of each event, in this order, one after another in ``RunEventLog._values``.
_FIELDS = 5


class RunEventLog:
    __slots__ = ("_clock", "_draw", "_values")

    def __init__(self, clock: Clock, ids: IdFactory) -> None:
        self._clock = clock
        self._draw = ids.draw
        #: Per event: the random bits of its id, its type, part, data and time.
        self._values: list[Any] = []

    def append(
        self, type_: str, data: Mapping[str, Any] | Rendered, part_id: str = LIFECYCLE_PART
    ) -> int:
        """Append an event of ``data`` (a mapping, or a record rendered when read), which the
        log owns from now on: nobody changes it afterwards. Returns its sequence."""
        values = self._values
        values += (self._draw(), type_, part_id, data, self._clock.now)
        return len(values) // _FIELDS

    def redact_outputs(self) -> None:
        """Empty the data of every output-part event (the run's content is being purged)."""
        values = self._values
        for data in range(3, len(values), _FIELDS):
            if values[data - 1] != LIFECYCLE_PART:
                values[data] = _REDACTED

    def _event(self, index: int) -> RunEvent:
        bits, type_, part_id, data, at = self._values[index * _FIELDS : (index + 1) * _FIELDS]
        ms = self._clock.epoch_ms(at)
        shown = data if isinstance(data, Mapping) else data.to_resource()
        view = MappingProxyType(shown)  # read-only for whoever reads the event
        return RunEvent(format_id("event", ms, bits), index + 1, type_, part_id, view, at)

    def __len__(self) -> int:
        return len(self._values) // _FIELDS

    @property
    def events(self) -> tuple[RunEvent, ...]:
        return tuple(self._event(index) for index in range(len(self)))

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
            self.events,
            offset,
            limit=limit,
            cursor_of=lambda e: e.sequence,
            render=lambda e: e.to_resource(self._clock),
        )
