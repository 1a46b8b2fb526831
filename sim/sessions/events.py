"""Session events: published as raw values, rendered on read (GAP-EV-1, EV-1).

A session event's payload is ``{"object": <the session as it was>, ...}`` plus one field of its
own (``SESSION_EVENT_FIELDS``). Rendering the session for every event, and copying it into the
log, is what made long runs slow and large; instead an event is published with the few values
its payload needs, ``(row, status, usage seconds, own value)``, and the payload is built when
someone reads it: from the session's row in the store (what never changes once set) and those
values (what was true at that moment). The result is byte for byte the eager rendering.

``text`` writes the same payload as compact JSON with sorted keys, the form the events table
keeps, from per-session fragments built once, so a run's events are written in bulk without
building their dictionaries. ``layout`` says what that text is (literal text and named slots),
for a collector that assembles many events' texts column by column instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any, Final

from sim.clock import Clock
from sim.events import EventLog
from sim.lifecycle import FAILURE_MESSAGES, STATUSES
from sim.sessions.records import NO_FRAME, NOT_PLACED, SessionState
from sim.sessions.store import SessionStore

__all__ = [
    "EVENT_SLOTS",
    "OBJECT_FIELDS",
    "SESSION_EVENT_FIELDS",
    "SHOWN_IN",
    "Layout",
    "SessionEvents",
    "Slot",
]

#: Each session event type and the field it carries next to ``object`` (stored raw) or ``None``.
SESSION_EVENT_FIELDS: Final[dict[str, str | None]] = {
    "session.queued": None,
    "session.starting": "worker_id",
    "session.first_frame": None,  # tracks: from the configuration
    "session.ending": "drain_seconds",
    "session.ended": "reason",
    "session.failed": "code",
    "session.canceled": None,
    "session.usage": None,  # usage: the session's final usage
    "session.barge_in": "dropped_seconds",  # and rpc, from the configuration
}

#: The session object's keys (``SessionState.to_resource``), in the order sorted JSON writes them.
OBJECT_FIELDS: Final[tuple[str, ...]] = (
    "avatar_id", "billing_surface", "created_at", "error", "first_frame_at", "id",
    "idle_timeout_seconds", "max_duration_seconds", "metadata", "object", "quality",
    "started_at", "status", "transport", "usage",
)  # fmt: skip
#: The fields an event shows only while its status is one of these (``null`` otherwise): what
#: ``to_resource`` leaves out of an earlier moment's session.
SHOWN_IN: Final[dict[str, frozenset[str]]] = {
    "error": frozenset({"failed"}),
    "first_frame_at": frozenset(STATUSES) - NO_FRAME,
    "started_at": frozenset(STATUSES) - NOT_PLACED,
}
#: The slots of a layout whose text varies from one event of a session to the next: the
#: fields above, the status, the usage and the event's own value. Every other slot is a field
#: whose text is the same in all of a session's events (``session_fields``).
EVENT_SLOTS: Final[frozenset[str]] = frozenset({*SHOWN_IN, "status", "usage", "value"})


@dataclass(frozen=True, slots=True)
class Slot:
    """A place in an event's text (``SessionEvents.layout``) that a value's JSON fills: a field
    of the session (``OBJECT_FIELDS``), or ``value``, the event's own field."""

    name: str


#: An event's text as a sequence of literal text and slots.
Layout = tuple[str | Slot, ...]

#: The session object's text: each field a slot named after it, but its constant ``object``.
_OBJECT_LAYOUT: Final[Layout] = (
    "{",
    *(
        item
        for index, field in enumerate(OBJECT_FIELDS)
        for item in (
            ("," if index else "") + f'"{field}":',
            '"session"' if field == "object" else Slot(field),
        )
    ),
    "}",
)

#: The text of each status's ``status`` field (the key that precedes it included).
_STATUS_TEXT: Final[dict[str, str]] = {
    status: f',"status":{encode_basestring_ascii(status)}' for status in STATUSES
}
#: Where an event type's template takes its one field besides the session (``_template``).
_NO_SLOT, _VALUE_FIRST, _VALUE_LAST, _USAGE_LAST = range(4)
_FRAGMENTS_KEPT = 4096  # sessions whose JSON fragments are cached (events come in time order)


def _json(value: Any) -> str:
    """Compact JSON with sorted keys; strings and numbers without building an encoder (the text
    ``json.dumps`` writes for them)."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, float) and math.isfinite(value):
        return float.__repr__(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class SessionEvents:
    def __init__(
        self,
        log: EventLog,
        store: SessionStore,
        clock: Clock,
        *,
        frames_per_second: int,
        tracks: tuple[str, ...],
        rpc: str,
    ) -> None:
        self._log = log
        self._store = store
        self._clock = clock
        self._fps = frames_per_second
        self._tracks = list(tracks)
        self._rpc = rpc
        self.handles: dict[str, int] = {
            type_: log.register(self._renderer(type_)) for type_ in SESSION_EVENT_FIELDS
        }
        self.types: dict[int, str] = {handle: type_ for type_, handle in self.handles.items()}
        self._fragments: dict[int, tuple[str, ...]] = {}
        self._write: Callable[[tuple[Any, ...]], str] | None = None
        self._errors: dict[str | None, str] = {None: "null"}  # an error code's ``error`` text
        self._shapes: dict[int, list[tuple[int, str]]] = {}  # a transport shape's sorted keys

    def publish(self, type_: str, state: SessionState, now: float, value: Any = None) -> None:
        """Publish ``type_`` about ``state`` now, with its own ``value`` and the usage it shows
        now (``usage_of``, inlined: every session event pays for it, five times a session)."""
        seconds = state.final_billable_seconds
        if seconds is None:
            seconds = 0 if state.heartbeats is None else state.heartbeats.usage_seconds(now)
        self._log.emit_row(
            type_,
            state.org_id,
            state.id,
            self.handles[type_],
            state.number,
            state.status,
            seconds,
            value,
            now,
        )

    # -- the payload as a dictionary --------------------------------------------------------

    def _extras(self, type_: str, seconds: int, value: Any) -> list[tuple[str, Any]]:
        """The fields an event of ``type_`` carries next to ``object``, in payload order."""
        field = SESSION_EVENT_FIELDS[type_]
        extras: list[tuple[str, Any]] = [] if field is None else [(field, value)]
        if type_ == "session.first_frame":
            extras.append(("tracks", list(self._tracks)))
        elif type_ == "session.usage":
            extras.append(("usage", {"billable_seconds": seconds, "frames": seconds * self._fps}))
        elif type_ == "session.barge_in":
            extras.append(("rpc", self._rpc))
        return extras

    def _renderer(self, type_: str) -> Callable[[tuple[Any, ...]], Any]:
        store, clock, fps = self._store, self._clock, self._fps

        def render(values: tuple[Any, ...]) -> dict[str, Any]:
            row, status, seconds, value = values
            body = store.state(row).to_resource(clock, fps, status=status, usage_seconds=seconds)
            return {"object": body, **dict(self._extras(type_, seconds, value))}

        return render

    # -- the payload as sorted compact JSON -------------------------------------------------

    def text(self, payload: tuple[Any, ...]) -> str:
        """``json.dumps(data, sort_keys=True, separators=(",", ":"))`` of a stored payload."""
        write = self._write
        if write is None:
            write = self._write = self.writer()
        return write(payload)

    def writer(self) -> Callable[[tuple[Any, ...]], str]:
        """A function that writes ``text`` of one stored payload, for writing a run's events in
        bulk.

        Why not ``json.dumps`` per event: a month at ``records: full`` has millions of events,
        and encoding each payload (or even its small ``tracks`` and ``usage`` fields) cost about
        five seconds per 100,000 sessions. Every field but a few is fixed per session or per
        event type, so the text is one ``%`` of its type's template (``_template``) with the
        session's cached fragments and the few values of the event; the loop's names are bound
        once here.
        """
        templates = {handle: self._template(type_) for type_, handle in self.handles.items()}
        fragments = self._fragments
        pieces_of = self._pieces
        fps = self._fps
        status_text = _STATUS_TEXT
        no_frame, not_placed = NO_FRAME, NOT_PLACED
        escape = encode_basestring_ascii
        usages: dict[int, str] = {}  # the usage object's text by billable seconds

        def write(payload: tuple[Any, ...]) -> str:
            handle, row, status, seconds, value = payload
            pieces = fragments.get(row)
            if pieces is None:
                pieces = pieces_of(row)
            head, error, first_frame, middle, started, tail = pieces
            usage = usages.get(seconds)
            if usage is None:  # one text per distinct usage: most events show 0
                usage = usages[seconds] = (
                    f'{{"billable_seconds":{seconds},"frames":{seconds * fps}}}'
                )
            parts = (
                head,
                error if status == "failed" else "null",
                "null" if status in no_frame else first_frame,
                middle,
                "null" if status in not_placed else started,
                status_text[status],
                tail,
                usage,
            )
            template, slot = templates[handle]
            if slot == _NO_SLOT:
                return template % parts
            if slot == _USAGE_LAST:
                return template % (*parts, usage)
            if value is None:
                shown = "null"
            elif type(value) is str:
                shown = escape(value)
            else:
                shown = _json(value)
            return template % ((shown, *parts) if slot == _VALUE_FIRST else (*parts, shown))

        return write

    def _template(self, type_: str) -> tuple[str, int]:
        """The text of a ``type_`` event as a ``%`` template, and where its one varying field
        other than the session goes (``_NO_SLOT``, the event's own value before or after the
        session, or the usage object after it).

        The session's slots are its fragments (``_pieces``), the error, first frame, start and
        status as the event shows them, and the usage object. Built from ``_extras``, the fields
        the dictionary rendering shows, with the keys sorted as ``json.dumps`` sorts them.
        """
        own = SESSION_EVENT_FIELDS[type_]
        body, value, usage = "\0body", "\0value", "\0usage"
        fields = [("object", body)] + [
            (key, value if key == own else usage if key == "usage" else _json(extra))
            for key, extra in self._extras(type_, 0, None)
        ]
        fields.sort()
        text = "{" + ",".join(f"{_json(key)}:{shown}" for key, shown in fields) + "}"
        text = text.replace("%", "%%")
        if value in text:
            slot = _VALUE_FIRST if text.index(value) < text.index(body) else _VALUE_LAST
        elif usage in text:
            assert text.index(usage) > text.index(body)  # "usage" sorts after "object"
            slot = _USAGE_LAST
        else:
            slot = _NO_SLOT
        text = text.replace(body, '%s%s,"first_frame_at":%s%s%s%s%s%s}')
        return text.replace(value, "%s").replace(usage, "%s"), slot

    # -- the payload's layout, for writing many events column by column -----------------

    def layout(self, type_: str) -> Layout:
        """The text of a ``type_`` event (``text``) as literal text and slots, adjacent literals
        joined: the fields ``_extras`` shows, with the keys sorted as ``json.dumps`` sorts them,
        the session object's fields (``OBJECT_FIELDS``) each a slot named after it but its
        constant ``object``, the event's own field a ``value`` slot and the usage object a
        ``usage`` slot (the session's usage, which ``session.usage`` also shows on its own).

        Why: a collector writing a run's events fills each slot for many events at once (from
        ``session_fields``, ``SHOWN_IN``, ``usage_text`` and the stored values) and joins them.
        """
        own = SESSION_EVENT_FIELDS[type_]
        fields: list[tuple[str, str | Slot]] = [("object", Slot("object"))]
        for key, extra in self._extras(type_, 0, None):
            if key == own:
                fields.append((key, Slot("value")))
            else:
                fields.append((key, Slot("usage") if key == "usage" else _json(extra)))
        items: list[str | Slot] = ["{"]
        for index, (key, shown) in enumerate(sorted(fields, key=lambda field: field[0])):
            items.append(("," if index else "") + _json(key) + ":")
            items.extend(_OBJECT_LAYOUT if shown == Slot("object") else (shown,))
        items.append("}")
        joined: list[str | Slot] = []
        for item in items:
            if isinstance(item, str) and joined and isinstance(joined[-1], str):
                joined[-1] += item
            else:
                joined.append(item)
        return tuple(joined)

    def session_fields(self, state: SessionState) -> dict[str, str]:
        """The text of each slot of a session's events that is the same in all of them (every
        field but ``EVENT_SLOTS``), and of the fields ``SHOWN_IN`` as they show when shown."""
        ts = self._clock.timestamp
        started, first_frame = state.started_at, state.first_frame_at
        return {
            "avatar_id": _json(state.avatar_id),
            "billing_surface": _json(state.billing_surface),
            "created_at": f'"{ts(state.created_at)}"',
            "error": self.error_text(state.error_code),
            "first_frame_at": "null" if first_frame is None else f'"{ts(first_frame)}"',
            "id": _json(state.id),
            "idle_timeout_seconds": _json(state.idle_timeout_seconds),
            "max_duration_seconds": _json(state.max_duration_seconds),
            "metadata": _json(state.metadata),
            "quality": _json(state.quality),
            "started_at": "null" if started is None else f'"{ts(started)}"',
            "transport": _json(state.transport),
        }

    def error_text(self, error_code: str | None) -> str:
        """The ``error`` field's text of a failed session with ``error_code`` (kept per code)."""
        error = self._errors.get(error_code)
        if error is None:
            assert error_code is not None
            error = self._errors[error_code] = _json(
                {"code": error_code, "message": FAILURE_MESSAGES[error_code]}
            )
        return error

    def usage_text(self, seconds: int) -> str:
        """The ``usage`` slot's text of an event that shows ``seconds`` billable seconds."""
        return _json({"billable_seconds": seconds, "frames": seconds * self._fps})

    def _pieces(self, row: int) -> tuple[str, ...]:
        """The JSON of what a session's events share, around the fields that vary: a finished
        session's read from the store's columns (cached: its events come close together), a live
        one's from its working state (not cached: it may still change)."""
        cached = self._fragments.get(row)
        if cached is not None:
            return cached
        live = self._store.live(row)
        if live is not None:
            return self._state_pieces(live)
        pieces = self._row_pieces(row)
        if len(self._fragments) >= _FRAGMENTS_KEPT:
            self._fragments.clear()
        self._fragments[row] = pieces
        return pieces

    def _state_pieces(self, state: SessionState) -> tuple[str, ...]:
        """``_pieces`` of a session's state (``to_resource``'s values)."""
        return self._fragments_of(
            state.id,
            (state.avatar_id, state.quality, state.billing_surface),
            (state.idle_timeout_seconds, state.max_duration_seconds),
            (state.created_at, state.started_at, state.first_frame_at),
            state.error_code,
            _json(state.metadata),
            _json(state.transport),
        )

    def _row_pieces(self, row: int) -> tuple[str, ...]:
        """``_pieces`` of a finished session read straight from the store's columns: building
        its ``SessionState`` first cost more than writing its text."""
        store = self._store
        profile = store.profiles[store.profile_codes[row]]
        started, first_frame = store.started_at[row], store.first_frame_at[row]
        metadata = store.metadata[row]
        return self._fragments_of(
            store.ids[row],
            (profile[2], profile[3], profile[4]),  # avatar, quality, surface
            (profile[5], store.max_durations[row]),  # idle timeout, longest duration
            (
                store.created_at[row],
                None if started != started else started,  # NaN: not set
                None if first_frame != first_frame else first_frame,
            ),
            store.reasons[store.error_codes[row]] or None,
            "{}" if metadata is None else _json(metadata),
            self._transport_text(row),
        )

    def _transport_text(self, row: int) -> str:
        """A stored session's transport as sorted JSON, from its values and its shape's keys
        (the key order of each shape sorted once)."""
        shape, *values = self._store.transports[row]
        order = self._shapes.get(shape)
        if order is None:
            keys = list(self._store.state(row).transport)
            order = self._shapes[shape] = [
                (index, f"{_json(keys[index])}:")
                for index in sorted(range(len(keys)), key=keys.__getitem__)
            ]
        return "{" + ",".join([key + _json(values[index]) for index, key in order]) + "}"

    def _fragments_of(
        self,
        session_id: str,
        profile: tuple[str, str, str],
        limits: tuple[int, int],
        times: tuple[float, float | None, float | None],
        error_code: str | None,
        metadata: str,
        transport: str,
    ) -> tuple[str, ...]:
        """The fragments of a session's values (its metadata and transport already as JSON).
        A timestamp's text needs no escaping: it is quoted as it is."""
        ts = self._clock.timestamp
        escape = encode_basestring_ascii
        avatar, quality, surface = profile
        created, started, first_frame = times
        error = self.error_text(error_code)
        return (
            f'{{"avatar_id":{escape(avatar)},"billing_surface":{escape(surface)},'
            f'"created_at":"{ts(created)}","error":',
            error,
            "null" if first_frame is None else f'"{ts(first_frame)}"',
            f',"id":{escape(session_id)},"idle_timeout_seconds":{limits[0]},'
            f'"max_duration_seconds":{limits[1]},"metadata":{metadata},"object":"session",'
            f'"quality":{escape(quality)},"started_at":',
            "null" if started is None else f'"{ts(started)}"',
            f',"transport":{transport},"usage":',
        )
