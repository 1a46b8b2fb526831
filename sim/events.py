"""The append-only event log of the service (GAP-EV-1).

Every lifecycle change (sessions, avatars, runs, billing) appends one event. Subscribers (the
webhook dispatcher, scenario clients) are called synchronously in subscription order, so what
they see is as deterministic as the log itself. A subscriber names the event types and the
organization it wants, and an event nobody wants costs no call at all.

Why events are stored as raw values: the payload of a session event is the session as it was at
that moment, and a long run has millions of events. A high-volume producer (the session events)
registers a renderer (``register``) and publishes only the values it needs
(``emit_values``: the session's row, its status, its usage seconds and the event's own value),
each kept in a typed column; the payload is rendered when someone reads ``Event.data``, byte for
byte what an eager rendering would have been. Rare events keep their payload as given (``emit``).
With ``keep=False`` nothing is stored at all: subscribers still see every event as it happens.
``export`` hands the stored events out as typed columns (``sim.columns.Table``).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.columns import Column, ColumnKind, Interner, Table
from sim.ids import PREFIXES, IdFactory, format_id
from sim.journal import Journal

__all__ = ["Event", "EventLog", "Producer", "Renderer", "Subscriber"]

#: A stored payload: a dictionary kept whole (``emit``), or a registered producer's handle and
#: its values ``(handle, row, status, seconds, value)`` (``emit_values``).
Payload = dict[str, Any] | tuple[Any, ...]
#: The handle of the events whose payload is kept whole, as their own value (``emit``); the
#: registered producers' handles follow it.
WHOLE = 0
_LOW_64 = (1 << 64) - 1

#: Builds an event's ``data`` from the values given to ``EventLog.emit_values``.
Renderer = Callable[[tuple[Any, ...]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Producer:
    """A registered producer of events: its renderer, the ``object`` type its payloads are
    about, and the name and kind of the field its events' own value fills (if any)."""

    renderer: Renderer | None
    object_type: str | None = None
    field: str | None = None
    kind: ColumnKind = "category"


class Event:
    """One event, read from the log: ``id``, ``type``, ``org_id``, ``at``, ``created_at``,
    ``data``. ``subject`` is the id of the resource it is about (a session, run or avatar id;
    the organization for billing events), known without rendering the payload."""

    __slots__ = ("_bits", "_data", "_log", "_payload", "at", "org_id", "subject", "type")

    def __init__(
        self,
        log: EventLog,
        type_: str,
        org_id: str,
        at: float,
        subject: str | None,
        bits: int,
        payload: dict[str, Any] | tuple[Any, ...],
    ) -> None:
        self._log = log
        self.type = type_
        self.org_id = org_id
        self.at = at
        self.subject = subject
        self._bits = bits
        self._payload = payload
        self._data: Mapping[str, Any] | None = None

    @property
    def id(self) -> str:
        return format_id("event", self._log.clock.epoch_ms(self.at), self._bits)

    @property
    def created_at(self) -> str:
        """ISO-8601 form of ``at``."""
        return self._log.clock.timestamp(self.at)

    @property
    def data(self) -> Mapping[str, Any]:
        if self._data is None:
            self._data = MappingProxyType(self._log.render(self._payload))
        return self._data

    def to_payload(self) -> dict[str, Any]:
        """The JSON shape sent to webhooks: ``{id, type, created_at, data}``."""
        return {
            "id": self.id,
            "type": self.type,
            "created_at": self.created_at,
            "data": dict(self.data),
        }

    def __repr__(self) -> str:
        return f"Event(type={self.type!r}, org_id={self.org_id!r}, at={self.at!r})"


Subscriber = Callable[[Event], None]


class EventLog:
    def __init__(
        self, clock: Clock, ids: IdFactory, journal: Journal | None = None, *, keep: bool = True
    ) -> None:
        self.clock = clock
        self._draw = ids.draw
        self._journal = journal if journal is not None else Journal()
        self.keep = keep
        self.kinds: Interner[tuple[str, str]] = Interner()  # (type, organization) pairs
        self._producers: list[Producer] = [Producer(None)]  # ``WHOLE`` first
        self._start_empty()
        self._subscribers: list[tuple[Subscriber, frozenset[str] | None, str | None]] = []
        #: By organization, then type: the (type, organization) pair's code in ``kinds`` and the
        #: subscribers that want it (forgotten when someone subscribes).
        self._lanes: dict[str, dict[str, tuple[int, tuple[Subscriber, ...]]]] = {}

    def _start_empty(self) -> None:
        """No stored event: one value per event in each column, in append order."""
        self._kind_codes = array("I")
        self._times = array("d")
        # The random part of each event's id, as drawn (80 bits; split in two when exported).
        self._random: list[int] = []
        self._subjects: list[str | None] = []
        # The payload ``(handle, row, status, seconds, value)``, one column each (for the handle
        # ``WHOLE`` the value is the payload dictionary, the others fillers). The status and the
        # event's own value are shared objects (a status string, a reason, ``None``).
        self._handles = array("I")
        self._rows = array("Q")
        self._seconds = array("Q")
        self._statuses: list[Any] = []
        self._values: list[Any] = []

    # -- producers -------------------------------------------------------------------------

    def register(
        self,
        renderer: Renderer,
        *,
        object_type: str | None = None,
        field: str | None = None,
        kind: ColumnKind = "category",
    ) -> int:
        """Register a producer (``Producer``) for ``emit_values``; returns its handle."""
        self._producers.append(Producer(renderer, object_type, field, kind))
        return len(self._producers) - 1

    def emit(
        self, type_: str, org_id: str, data: Mapping[str, Any], *, subject: str | None = None
    ) -> Event:
        """Append an event whose payload is ``data`` as given (copied): the producer ``WHOLE``'s
        event, with the payload as its own value."""
        payload = dict(data)
        if subject is None:
            obj = payload.get("object")
            subject = obj.get("id") if isinstance(obj, dict) else None
        bits = self._draw()
        now = self.clock.now
        self.emit_values(type_, org_id, subject, WHOLE, 0, None, 0, payload, now, bits)
        return Event(self, type_, org_id, now, subject, bits, payload)

    def emit_values(
        self,
        type_: str,
        org_id: str,
        subject: str | None,
        handle: int,
        row: int,
        status: Any,
        seconds: int,
        value: Any,
        now: float,
        bits: int | None = None,
    ) -> None:
        """Append an event of the producer ``handle`` (from ``register``) whose payload its
        renderer builds from ``(row, status, seconds, value)`` when it is read: ``row`` and
        ``seconds`` are non-negative ints, ``status`` and ``value`` shared objects. The
        renderer must depend only on those and on what never changes afterwards.

        The id's random bits are drawn now (``bits``: already drawn). The event is stored now if
        the log keeps events (inside an operation, with an undo that takes it out again if the
        operation fails: ``sim.journal``) and handed to who wants it once it stands: at once
        outside an operation, when the operation succeeds inside one. The ``Event`` a
        subscriber receives is built only when one wants it."""
        if bits is None:
            bits = self._draw()
        lanes = self._lanes.get(org_id)
        lane = None if lanes is None else lanes.get(type_)
        code, route = self._lane(type_, org_id) if lane is None else lane
        journal = self._journal
        if self.keep:
            self._kind_codes.append(code)
            self._times.append(now)
            self._subjects.append(subject)
            self._random.append(bits)
            self._handles.append(handle)
            self._rows.append(row)
            self._seconds.append(seconds)
            self._statuses.append(status)
            self._values.append(value)
            if journal.active:
                journal.on_undo(self._retract)
        if route:
            event = Event(
                self, type_, org_id, now, subject, bits, (handle, row, status, seconds, value)
            )
            if journal.active:  # the operation may still fail: delivered when it succeeds
                journal.deferred.append((_deliver, (event, route)))
                return
            for subscriber in route:
                subscriber(event)

    def _retract(self) -> None:
        """Take the newest stored event out again (its operation failed as a whole)."""
        for column in (
            self._kind_codes,
            self._times,
            self._subjects,
            self._random,
            self._handles,
            self._rows,
            self._seconds,
            self._statuses,
            self._values,
        ):
            column.pop()

    def payload(self, index: int) -> Payload:
        """The payload stored for event ``index``, as it was given."""
        handle = self._handles[index]
        if handle == WHOLE:
            value: dict[str, Any] = self._values[index]
            return value
        return (
            handle,
            self._rows[index],
            self._statuses[index],
            self._seconds[index],
            self._values[index],
        )

    @property
    def payloads(self) -> list[Payload]:
        """Every stored payload, in order."""
        return [self.payload(index) for index in range(len(self._times))]

    def render(self, payload: Payload) -> dict[str, Any]:
        """The ``data`` of a stored payload."""
        if isinstance(payload, dict):
            return dict(payload)
        if payload[0] == WHOLE:
            return dict(payload[4])
        renderer = self._producers[payload[0]].renderer
        assert renderer is not None
        return renderer(payload[1:])

    # -- subscribers -----------------------------------------------------------------------

    def subscribe(
        self,
        subscriber: Subscriber,
        *,
        types: Iterable[str] | None = None,
        org_id: str | None = None,
    ) -> None:
        """Call ``subscriber`` for every later event of ``types`` (all when ``None``) of
        ``org_id`` (every organization when ``None``)."""
        wanted = None if types is None else frozenset(types)
        self._subscribers.append((subscriber, wanted, org_id))
        self._lanes = {}

    def _lane(self, type_: str, org_id: str) -> tuple[int, tuple[Subscriber, ...]]:
        """The code and route of events of ``type_`` of ``org_id`` (made on first use)."""
        lanes = self._lanes.get(org_id)
        lane = None if lanes is None else lanes.get(type_)
        if lane is not None:
            return lane
        route = tuple(
            subscriber
            for subscriber, types, org in self._subscribers
            if (types is None or type_ in types) and (org is None or org == org_id)
        )
        lane = (self.kinds.code((type_, org_id)), route)
        self._lanes.setdefault(org_id, {})[type_] = lane
        return lane

    def release(self) -> None:
        """Drop every stored event and keep none from now on (``keep`` turns off): who read the
        log in bulk (a run's collector) hands its memory back. Subscribers are still called."""
        self.keep = False
        self._start_empty()

    # -- reading ---------------------------------------------------------------------------

    def event(self, index: int) -> Event:
        type_, org_id = self.kinds[self._kind_codes[index]]
        return Event(
            self,
            type_,
            org_id,
            self._times[index],
            self._subjects[index],
            self._random[index],
            self.payload(index),
        )

    def __iter__(self) -> Iterator[Event]:
        return (self.event(i) for i in range(len(self._times)))

    def __len__(self) -> int:
        return len(self._times)

    def of_type(self, type_: str) -> list[Event]:
        codes = {code for code, (t, _org) in enumerate(self.kinds.values) if t == type_}
        return [self.event(i) for i, c in enumerate(self._kind_codes) if c in codes]

    def for_org(self, org_id: str) -> list[Event]:
        codes = {code for code, (_t, org) in enumerate(self.kinds.values) if org == org_id}
        return [self.event(i) for i, c in enumerate(self._kind_codes) if c in codes]

    def export(self) -> Table:
        """Every stored event in order: ``event_id``; ``at`` (time); ``type`` and ``org_id``
        (categories); ``object_type`` (category) and ``object_id``: the resource it is about;
        ``status`` (category): the resource's status as the event shows it; ``seconds``: the
        usage seconds a producer's event shows (missing for a payload kept whole); and one
        column per field a producer's events carry as their own value (``Producer.field``, of
        its ``kind``), which a payload kept whole fills from its own field of that name;
        ``payload``: a payload kept whole as sorted compact JSON (missing for a producer's
        events, whose values are the columns above)."""
        count = len(self._times)
        producers = self._producers
        object_types = [p.object_type for p in producers]
        handles, statuses = array("I", self._handles), list(self._statuses)
        fields = {p.field: p.kind for p in producers if p.field is not None}
        field_of = [p.field for p in producers]
        values: dict[str, dict[int, Any]] = {name: {} for name in fields}
        whole: dict[int, dict[str, Any]] = {}
        for index, (handle, value) in enumerate(zip(self._handles, self._values, strict=True)):
            if handle == WHOLE:
                whole[index] = value
                continue
            name = field_of[handle]
            if name is not None and value is not None:
                values[name][index] = value
        for index, payload in whole.items():  # rare: their values are in the dictionary
            obj = payload.get("object")
            obj = obj if isinstance(obj, dict) else {}
            handles[index] = len(object_types)
            object_types.append(obj.get("object"))
            statuses[index] = obj.get("status")
            for name in fields:
                if payload.get(name) is not None:
                    values[name][index] = payload[name]
        kinds = self.kinds.values
        columns = {
            "event_id": Column(
                "timed_id",
                self._times,
                prefix=PREFIXES["event"],
                high=array("Q", (bits >> 64 for bits in self._random)),
                low=array("Q", (bits & _LOW_64 for bits in self._random)),
            ),
            "at": Column("time", self._times),
            "type": Column("category", self._kind_codes, labels=[k[0] for k in kinds]),
            "org_id": Column("category", self._kind_codes, labels=[k[1] for k in kinds]),
            "object_type": Column("category", handles, labels=object_types),
            "object_id": Column("text", self._subjects),
            "status": Column("category", statuses),
            "seconds": Column("int", self._seconds, missing=whole.keys()),
            **{name: Column(kind, values[name]) for name, kind in fields.items()},
            "payload": Column(
                "text",
                {
                    index: json.dumps(payload, sort_keys=True, separators=(",", ":"))
                    for index, payload in whole.items()
                },
            ),
        }
        return Table(count, columns)


def _deliver(event: Event, route: tuple[Subscriber, ...]) -> None:
    """Hand ``event`` to each subscriber of its route, in subscription order."""
    for subscriber in route:
        subscriber(event)
