"""Session events: published as raw values, rendered on read (GAP-EV-1, EV-1).

A session event's payload is ``{"object": <the session as it was>, ...}`` plus one field of its
own (``SESSION_EVENT_FIELDS``). Rendering the session for every event, and copying it into the
log, is what made long runs slow and large; instead an event is published with the few values
its payload needs, ``(row, status, usage seconds, own value)``, and the payload is built when
someone reads it: from the session's row in the store (what never changes once set) and those
values (what was true at that moment). The result is byte for byte the eager rendering.

``text`` writes the same payload as compact JSON with sorted keys, the form the events table
keeps, from per-session fragments built once, so a run's events are written in bulk without
building their dictionaries.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any, Final

from sim.clock import Clock
from sim.events import EventLog
from sim.lifecycle import FAILURE_MESSAGES
from sim.sessions.records import NO_FRAME, NOT_PLACED, SessionState
from sim.sessions.store import SessionStore

__all__ = ["SESSION_EVENT_FIELDS", "SessionEvents"]

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

    def publish(self, type_: str, state: SessionState, now: float, value: Any = None) -> None:
        """Publish ``type_`` about ``state`` now, with its own ``value`` and the usage it shows
        now (``usage_of``, inlined: every session event pays for it, five times a session)."""
        seconds = state.final_billable_seconds
        if seconds is None:
            seconds = 0 if state.heartbeats is None else state.heartbeats.usage_seconds(now)
        self._log.emit_payload(
            type_,
            state.org_id,
            state.id,
            (self.handles[type_], state.number, state.status, seconds, value),
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
        handle, row, status, seconds, value = payload
        head, error, first_frame, middle, started, tail = self._pieces(row)
        body = "".join(
            (
                head,
                error if status == "failed" else "null",
                ',"first_frame_at":',
                "null" if status in NO_FRAME else first_frame,
                middle,
                "null" if status in NOT_PLACED else started,
                ',"status":',
                _json(status),
                tail,
                f'{{"billable_seconds":{seconds},"frames":{seconds * self._fps}}}}}',
            )
        )
        fields = [("object", body)] + [
            (key, _json(extra)) for key, extra in self._extras(self.types[handle], seconds, value)
        ]
        fields.sort()
        return "{" + ",".join(f'"{key}":{text}' for key, text in fields) + "}"

    def _pieces(self, row: int) -> tuple[str, ...]:
        """The JSON of what a session's events share, around the fields that vary."""
        cached = self._fragments.get(row)
        if cached is not None:
            return cached
        state = self._store.state(row)
        clock = self._clock
        ts = clock.timestamp
        error = (
            "null"
            if state.error_code is None
            else _json({"code": state.error_code, "message": FAILURE_MESSAGES[state.error_code]})
        )
        pieces = (
            f'{{"avatar_id":{_json(state.avatar_id)},"billing_surface":'
            f'{_json(state.billing_surface)},"created_at":{_json(ts(state.created_at))},"error":',
            error,
            "null" if state.first_frame_at is None else _json(ts(state.first_frame_at)),
            f',"id":{_json(state.id)},"idle_timeout_seconds":{state.idle_timeout_seconds},'
            f'"max_duration_seconds":{state.max_duration_seconds},"metadata":'
            f'{_json(state.metadata)},"object":"session","quality":{_json(state.quality)},'
            f'"started_at":',
            "null" if state.started_at is None else _json(ts(state.started_at)),
            f',"transport":{_json(state.transport)},"usage":',
        )
        if len(self._fragments) >= _FRAGMENTS_KEPT:
            self._fragments.clear()
        if state.terminal:  # a live session's fragments may still change
            self._fragments[row] = pieces
        return pieces
