"""The append-only event log of the service (GAP-EV-1).

Every lifecycle change (sessions, avatars, runs, billing) appends one event. Subscribers (the
webhook dispatcher, scenario clients) are called synchronously in subscription order, so what
they see is as deterministic as the log itself. A subscriber names the event types and the
organization it wants, and an event nobody wants costs no call at all.

Why events are stored as raw values: the payload of a session event is the session as it was at
that moment, and a long run has millions of events. The log keeps the raw values (the simulated
time, the random bits of the id, interned codes) and, for high-volume producers, a renderer and
the few values it needs (``emit_values``; the session events, most of all, ``emit_row``); the
payload is rendered when someone reads ``Event.data``, byte for byte what an eager rendering would
have been. Rare events keep their payload as given (``emit``). With ``keep=False`` nothing is
stored at all: subscribers still see every event as it happens.

Why the values sit in typed columns rather than a tuple per event: a 100,000-session month at
``records: full`` stores over half a million events, and a Python tuple of five values plus an
80-bit int per event cost about 120 bytes each, more than the rest of the event together. The
session events' payload is always ``(renderer, row, status, seconds, value)``; those five go to
columns (``handles``, ``rows``, ``statuses``, ``seconds``, and ``values`` for the event's own
value; the last two hold shared objects: status strings, reasons, ``None``); any other payload is
kept whole (``whole``). ``payload(i)`` gives back the tuple.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.columns import Interner
from sim.ids import IdFactory, format_id
from sim.journal import Journal

__all__ = ["Event", "EventLog", "Renderer", "Subscriber"]

Payload = dict[str, Any] | tuple[Any, ...]
#: ``handles`` value of an event whose payload is kept whole, in ``EventLog.whole`` (a renderer's
#: handle is its index among the registered ones: far below).
WHOLE = 0xFFFF_FFFF

#: Builds an event's ``data`` from the values given to ``EventLog.emit_values``.
Renderer = Callable[[tuple[Any, ...]], dict[str, Any]]


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
        self._ids = ids
        self._draw = ids.draw
        self._journal = journal if journal is not None else Journal()
        self.keep = keep
        self.kinds: Interner[tuple[str, str]] = Interner()  # (type, organization) pairs
        # One value per event, in append order.
        self.kind_codes = array("I")
        self.times = array("d")
        self.id_bits = bytearray()  # the random part of each event id: ten bytes, little-endian
        self.subjects: list[str | None] = []
        # The payload ``(handle, row, status, seconds, value)``, one column each (filler values
        # when ``handles`` says ``WHOLE``: the payload is then ``whole[index]``). The status and
        # the event's own value are shared objects (a status string, a reason, ``None``).
        self.handles = array("I")
        self.rows = array("I")
        self.seconds = array("I")
        self.statuses: list[Any] = []
        self.values: list[Any] = []
        self.whole: dict[int, Payload] = {}
        self._renderers: list[Renderer] = []
        self._subscribers: list[tuple[Subscriber, frozenset[str] | None, str | None]] = []
        #: By organization, then type: the (type, organization) pair's code in ``kinds`` and the
        #: subscribers that want it (forgotten when someone subscribes). Two lookups of a string
        #: (whose hash is cached) cost less than building and hashing a pair per event.
        self._lanes: dict[str, dict[str, tuple[int, tuple[Subscriber, ...]]]] = {}

    # -- producers -------------------------------------------------------------------------

    def register(self, renderer: Renderer) -> int:
        """Register a payload renderer for ``emit_values``; returns its handle."""
        self._renderers.append(renderer)
        return len(self._renderers) - 1

    def emit(
        self, type_: str, org_id: str, data: Mapping[str, Any], *, subject: str | None = None
    ) -> Event:
        """Append an event whose payload is ``data`` as given (copied)."""
        payload = dict(data)
        if subject is None:
            obj = payload.get("object")
            subject = obj.get("id") if isinstance(obj, dict) else None
        bits = self._draw()
        now = self.clock.now
        event = Event(self, type_, org_id, now, subject, bits, payload)
        self.emit_payload(type_, org_id, subject, payload, now, bits, event)
        return event

    def emit_values(
        self,
        type_: str,
        org_id: str,
        subject: str,
        renderer: int,
        values: tuple[Any, ...],
        now: float,
    ) -> None:
        """Append an event whose payload ``renderer`` builds from ``values`` when it is read.

        The renderer must depend only on ``values`` and on what never changes afterwards.
        """
        self.emit_payload(type_, org_id, subject, (renderer, *values), now)

    def emit_payload(
        self,
        type_: str,
        org_id: str,
        subject: str | None,
        payload: dict[str, Any] | tuple[Any, ...],
        now: float,
        bits: int | None = None,
        event: Event | None = None,
    ) -> None:
        """Append an event with its stored payload as given: ``(renderer, *values)`` or a
        dictionary (``emit``). The session events take ``emit_row``, the same without the tuple.

        The id's random bits are drawn now (``bits``: already drawn). Inside an operation the
        rest waits until it succeeds (the journal calls this again then); otherwise the event is
        stored, if the log keeps events, and handed to who wants it. The ``Event`` a subscriber
        receives is built only when one wants it (``emit`` passes its own)."""
        if bits is None:
            bits = self._draw()
        journal = self._journal
        if journal.active:  # inside an operation: published once it succeeds (``Journal.defer``)
            journal.deferred.append(
                (self.emit_payload, (type_, org_id, subject, payload, now, bits, event))
            )
            return
        code, route = self._lane(type_, org_id)
        if self.keep:
            self._append(code, now, subject, bits)
            self._store(payload)
        if route:
            if event is None:
                event = Event(self, type_, org_id, now, subject, bits, payload)
            for subscriber in route:
                subscriber(event)

    def emit_row(
        self,
        type_: str,
        org_id: str,
        subject: str,
        handle: int,
        row: int,
        status: Any,
        seconds: int,
        value: Any,
        now: float,
        bits: int | None = None,
    ) -> None:
        """``emit_payload(type_, org_id, subject, (handle, row, status, seconds, value), now)``
        for a producer whose ``handle`` (from ``register``), ``row`` and ``seconds`` are ints
        (never bools): the session events, six a session, the most frequent event there is.

        The same event stored the same way (a test holds the two paths equal), without building
        the payload tuple to take it apart again or testing its values' types: a value the
        columns refuse (too large, negative) still goes to ``_store``, which keeps it whole."""
        if bits is None:
            bits = self._draw()
        journal = self._journal
        if journal.active:  # inside an operation: published once it succeeds
            if not self.keep:  # nothing is stored: held back only if someone wants it now
                lanes = self._lanes.get(org_id)
                lane = None if lanes is None else lanes.get(type_)
                if lane is not None and not lane[1]:
                    return
            # Held as ``Journal.defer`` holds a call, without a ``partial`` and ``defer``'s
            # frame: every create and end holds one (about 1,400 instructions less each).
            journal.deferred.append(
                (
                    self.emit_row,
                    (type_, org_id, subject, handle, row, status, seconds, value, now, bits),
                )
            )
            return
        lanes = self._lanes.get(org_id)  # ``_lane`` and ``_append``, inlined: six a session
        lane = None if lanes is None else lanes.get(type_)
        code, route = self._lane(type_, org_id) if lane is None else lane
        if self.keep:
            self.kind_codes.append(code)
            self.times.append(now)
            self.subjects.append(subject)
            self.id_bits += bits.to_bytes(10, "little")
            try:
                self.rows.append(row)
                self.seconds.append(seconds)
                self.handles.append(handle)
            except (OverflowError, TypeError):
                self._store((handle, row, status, seconds, value))
            else:
                self.statuses.append(status)
                self.values.append(value)
        if route:
            event = Event(
                self, type_, org_id, now, subject, bits, (handle, row, status, seconds, value)
            )
            for subscriber in route:
                subscriber(event)

    def _append(self, code: int, now: float, subject: str | None, bits: int) -> None:
        """Append what every stored event has: its kind, time, subject and id bits."""
        self.kind_codes.append(code)
        self.times.append(now)
        self.subjects.append(subject)
        self.id_bits += bits.to_bytes(10, "little")  # not an 80-bit int object (40 bytes)

    def _store(self, payload: Payload) -> None:
        """Append one payload to the payload columns (first undoing what a refused
        ``emit_row`` appended to them): a ``(handle, row, status, seconds, value)`` tuple
        whose handle, row and seconds are ints that fit goes to the columns, anything else is
        kept whole, with filler values in the columns."""
        index = len(self.values)
        del self.rows[index:], self.seconds[index:], self.handles[index:]
        if type(payload) is tuple and len(payload) == 5:
            handle, row, status, seconds, value = payload
            if (
                type(row) is int
                and type(seconds) is int
                and type(handle) is int
                and 0 <= row < 2**32
                and 0 <= seconds < 2**32
                and 0 <= handle < WHOLE
            ):
                self.handles.append(handle)
                self.rows.append(row)
                self.seconds.append(seconds)
                self.statuses.append(status)
                self.values.append(value)
                return
        self.whole[index] = payload
        self.handles.append(WHOLE)
        self.rows.append(0)
        self.seconds.append(0)
        self.statuses.append(None)
        self.values.append(None)

    def payload(self, index: int) -> Payload:
        """The payload stored for event ``index``, as it was given."""
        handle = self.handles[index]
        if handle == WHOLE:
            return self.whole[index]
        return (
            handle,
            self.rows[index],
            self.statuses[index],
            self.seconds[index],
            self.values[index],
        )

    def iter_payloads(self) -> Iterator[Payload]:
        """``payload(i)`` of every event, in order, without the per-index lookups."""
        whole = self.whole
        rows = zip(self.handles, self.rows, self.statuses, self.seconds, self.values, strict=True)
        for index, (handle, row, status, seconds, value) in enumerate(rows):
            yield whole[index] if handle == WHOLE else (handle, row, status, seconds, value)

    @property
    def payloads(self) -> list[Payload]:
        """Every stored payload, in order (a new list: the log keeps columns)."""
        return list(self.iter_payloads())

    def render(self, payload: dict[str, Any] | tuple[Any, ...]) -> dict[str, Any]:
        """The ``data`` of a stored payload."""
        if isinstance(payload, dict):
            return dict(payload)
        renderer: Renderer = self._renderers[payload[0]]
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
        self.kind_codes, self.times = array("I"), array("d")
        self.id_bits, self.subjects = bytearray(), []
        self.handles, self.rows, self.seconds = array("I"), array("I"), array("I")
        self.statuses, self.values, self.whole = [], [], {}

    # -- reading ---------------------------------------------------------------------------

    def event(self, index: int) -> Event:
        type_, org_id = self.kinds[self.kind_codes[index]]
        return Event(
            self,
            type_,
            org_id,
            self.times[index],
            self.subjects[index],
            int.from_bytes(self.id_bits[index * 10 : index * 10 + 10], "little"),
            self.payload(index),
        )

    def __iter__(self) -> Iterator[Event]:
        return (self.event(i) for i in range(len(self.times)))

    def __len__(self) -> int:
        return len(self.times)

    def of_type(self, type_: str) -> list[Event]:
        codes = {code for code, (t, _org) in enumerate(self.kinds.values) if t == type_}
        return [self.event(i) for i, c in enumerate(self.kind_codes) if c in codes]

    def for_org(self, org_id: str) -> list[Event]:
        codes = {code for code, (_t, org) in enumerate(self.kinds.values) if org == org_id}
        return [self.event(i) for i, c in enumerate(self.kind_codes) if c in codes]
