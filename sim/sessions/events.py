"""Session events: published as raw values, rendered on read (GAP-EV-1, EV-1).

A session event's payload is ``{"object": <the session as it was>, ...}`` plus the fields its
type declares (``SESSION_EVENTS``). Rendering the session for every event, and copying it into
the log, is what made long runs slow and large; instead an event is published with the few values
its payload needs, ``(row, status, usage seconds, own value)``, and the payload is built when
someone reads it (the API, a webhook): from the session's row in the store (what never changes
once set) and those values (what was true at that moment). The result is byte for byte the eager
rendering. The event log exports the same values as typed columns (``EventLog.export``), each
type's own value under the name its declaration gives it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from sim.clock import Clock
from sim.columns import ColumnKind
from sim.events import EventLog
from sim.sessions.store import SessionStore

__all__ = ["SESSION_EVENTS", "EventFields", "SessionEvents"]


@dataclass(frozen=True, slots=True)
class EventFields:
    """What a session event carries next to ``object``: its own value, under ``field`` (of
    ``kind``, as the events table keeps it), and which of the configured or derived fields it
    shows: the published ``tracks``, the session's ``usage`` and the barge-in ``rpc``."""

    field: str | None = None
    kind: ColumnKind = "category"
    tracks: bool = False
    usage: bool = False
    rpc: bool = False


#: Every session event type and its fields: the one declaration the renderer and the events
#: table's columns are both read from.
SESSION_EVENTS: Final[dict[str, EventFields]] = {
    "session.queued": EventFields(),
    "session.starting": EventFields("worker_id"),
    "session.first_frame": EventFields(tracks=True),
    "session.ending": EventFields("drain_seconds", "float"),
    "session.ended": EventFields("reason"),
    "session.failed": EventFields("code"),
    "session.canceled": EventFields(),
    "session.usage": EventFields(usage=True),
    "session.barge_in": EventFields("dropped_seconds", "float", rpc=True),
}


class SessionEvents:
    """Each session event type's producer on the log: registered with its renderer, its handle
    in ``handles``. The service publishes an event by its handle with the raw values
    (``SessionService._emit``: the session's row, status and usage, and the event's own value)."""

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
            type_: log.register(
                self._renderer(type_, fields),
                object_type="session",
                field=fields.field,
                kind=fields.kind,
            )
            for type_, fields in SESSION_EVENTS.items()
        }

    def _renderer(self, type_: str, fields: EventFields) -> Callable[[tuple[Any, ...]], Any]:
        """The payload of a ``type_`` event from its stored values, as ``fields`` declares."""
        store, clock, fps = self._store, self._clock, self._fps

        def render(values: tuple[Any, ...]) -> dict[str, Any]:
            row, status, seconds, value = values
            body = store.state(row).to_resource(clock, fps, status=status, usage_seconds=seconds)
            data: dict[str, Any] = {"object": body}
            if fields.field is not None:
                data[fields.field] = value
            if fields.tracks:
                data["tracks"] = list(self._tracks)
            if fields.usage:
                data["usage"] = {"billable_seconds": seconds, "frames": seconds * fps}
            if fields.rpc:
                data["rpc"] = self._rpc
            return data

        return render
