"""Every session of the platform: live ones as objects, finished ones as columns.

Why two forms: a live session needs a mutable working state (timers, audio, heartbeats), but a
month of traffic leaves millions of finished sessions that the API must still list and retrieve.
Each session gets a row number in creation order; what the create decided is appended to typed
columns at once, and when the session turns terminal its final values are written to its row and
the live object is dropped. ``state(row)`` reads either form back as a ``SessionState``, so the
service renders both the same way. A finished session costs a few hundred bytes.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterator
from functools import partial
from typing import Any

from sim.columns import Column, Interner, Table
from sim.lifecycle import STATUSES
from sim.sessions.records import SessionState, usage_of
from sim.sessions.validation import TRANSPORT_KEYS

__all__ = ["SessionStore"]

_NAN = math.nan
_STATUS_CODE = {status: code for code, status in enumerate(STATUSES)}


def _optional(value: float) -> float | None:
    return None if math.isnan(value) else value


#: What a create decides that many sessions share, kept as one interned tuple per session:
#: (org, key, avatar, quality, surface, idle timeout, resets on silence). The longest duration is
#: not in it: clients draw it per session, and a profile unique to each session cost about 200
#: bytes a session (the tuple, its key id string, its vocabulary entry) instead of four.
_Profile = tuple[str, str, str, str, str, int, bool]
#: A transport's keys and values, in its order, its room's name (``_ROOM``) given as ``None``.
_TransportKind = tuple[tuple[str, ...], tuple[Any, ...]]
_ROOM = "room_name"
_GROW = 4096  # rows added to the final-value columns at a time


class SessionStore:
    def __init__(self) -> None:
        self._start_empty()

    def _start_empty(self) -> None:
        """Every column and index, empty (a new store, or one whose sessions were released)."""
        self.ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._live: dict[int, SessionState] = {}
        self._by_org: dict[str, array[int]] = {}
        # Decided at creation: (org, key, avatar, quality, surface, idle, resets) as one
        # interned profile, the longest duration, the transport's values, metadata, creation time.
        self.profiles: Interner[_Profile] = Interner()
        self.profile_codes = array("I")
        # Any int the configuration allows (at least 1): unsigned, as an array stores those
        # without parsing each one (``PyArg_Parse``) as it does signed and byte items.
        self.max_durations = array("Q")
        # A transport's keys and values, but its room's name, repeat from session to session:
        # one interned kind each, and the room apart (``None``: the transport has none).
        self._transport_kinds: Interner[_TransportKind] = Interner()
        self.transport_kinds = array("I")
        self.rooms: list[str | None] = []
        self.metadata: list[dict[str, Any] | None] = []  # None: empty
        self.embeds: dict[int, str] = {}
        self.created_at = array("d")
        # Written when the session turns terminal; grown ahead in blocks (placeholders).
        self.status_codes = array("B")
        self.started_at = array("d")
        self.first_frame_at = array("d")
        self.ending_at = array("d")
        self.ended_at = array("d")
        self.reasons: Interner[str] = Interner([""])  # end reasons and error codes; "" for none
        self.end_reason_codes = array("B")
        self.error_codes = array("B")
        self.workers: Interner[str] = Interner([""])
        self.worker_codes = array("I")
        self.billable_seconds = array("I")
        self.charged = array("B")
        self.barge_ins = array("I")

    # -- writing ---------------------------------------------------------------------------

    def next_row(self) -> int:
        return len(self.ids)

    def add(self, state: SessionState) -> None:
        """A session just created (``state.number`` must be ``next_row()``)."""
        row = state.number
        if row != len(self.ids):
            raise ValueError("sessions are added in row order")
        self.ids.append(state.id)
        self._rows[state.id] = row
        self._live[row] = state
        org_rows = self._by_org.get(state.org_id)
        if org_rows is None:
            org_rows = self._by_org[state.org_id] = array("I")
        org_rows.append(row)
        profile = (
            state.org_id,
            state.key_id,
            state.avatar_id,
            state.quality,
            state.billing_surface,
            state.idle_timeout_seconds,
            state.resets_on_silence,
        )
        self.profile_codes.append(self.profiles.code(profile))
        self.max_durations.append(state.max_duration_seconds)
        transport = state.transport
        room = transport.get(_ROOM)
        if room is not None:
            transport = transport.copy()
            transport[_ROOM] = None
        self.transport_kinds.append(
            self._transport_kinds.code((tuple(transport), tuple(transport.values())))
        )
        self.rooms.append(room)
        self.metadata.append(state.metadata or None)
        if state.embed_id is not None:
            self.embeds[row] = state.embed_id
        self.created_at.append(state.created_at)
        if row >= len(self.status_codes):
            self._grow()

    def remove(self, state: SessionState) -> None:
        """Undo ``add`` of the newest session, whose create then failed (``sim.journal``): its
        row, id, organization index entry and creation columns go, and so does a profile or
        transport shape only it used. Safe to call when ``state`` was never added."""
        row = state.number
        if row != len(self.ids) - 1 or self.ids[row] != state.id:
            return
        self.ids.pop()
        del self._rows[state.id]
        self._live.pop(row, None)
        org_rows = self._by_org[state.org_id]
        org_rows.pop()
        if not org_rows:
            del self._by_org[state.org_id]
        profile = self.profile_codes.pop()
        self.profiles.forget(profile, self.profile_codes)
        self.max_durations.pop()
        self.rooms.pop()
        self._transport_kinds.forget(self.transport_kinds.pop(), self.transport_kinds)
        self.metadata.pop()
        self.embeds.pop(row, None)
        self.created_at.pop()

    def _grow(self) -> None:
        self.status_codes.frombytes(bytes(_GROW))
        for column in (self.started_at, self.first_frame_at, self.ending_at, self.ended_at):
            column.extend(array("d", [_NAN]) * _GROW)
        for small in (self.end_reason_codes, self.error_codes, self.charged):
            small.frombytes(bytes(_GROW))
        for wide in (self.worker_codes, self.billable_seconds, self.barge_ins):
            wide.frombytes(bytes(4 * _GROW))

    def archive(self, state: SessionState) -> None:
        """Write a terminal session's final values to its row and drop the live object."""
        row = state.number
        self.status_codes[row] = _STATUS_CODE[state.status]
        started, first_frame, ending = state.started_at, state.first_frame_at, state.ending_at
        if started is not None:  # the columns hold NaN until written
            self.started_at[row] = started
        if first_frame is not None:
            self.first_frame_at[row] = first_frame
        if ending is not None:
            self.ending_at[row] = ending
        ended = state.ended_at
        if ended is not None:  # always, once terminal
            self.ended_at[row] = ended
        # "" (none) is code 0 of both vocabularies: a session has a reason or an error, not both.
        reason, error, worker = state.end_reason, state.error_code, state.worker_id
        self.end_reason_codes[row] = 0 if reason is None else self.reasons.code(reason)
        self.error_codes[row] = 0 if error is None else self.reasons.code(error)
        self.worker_codes[row] = 0 if worker is None else self.workers.code(worker)
        self.billable_seconds[row] = state.final_billable_seconds or 0
        self.charged[row] = state.charged
        self.barge_ins[row] = state.barge_ins
        del self._live[row]

    def release(self) -> None:
        """Forget every session, keeping only the vocabularies of end reasons and error codes:
        who read the store in bulk (a run's collector, which hands the run over) returns its
        memory. The store is then empty, as a new one."""
        reasons = self.reasons
        self._start_empty()
        self.reasons = reasons

    # -- reading ---------------------------------------------------------------------------

    def row(self, session_id: str) -> int | None:
        return self._rows.get(session_id)

    def live(self, row: int) -> SessionState | None:
        """The working state of a session that is not terminal yet."""
        return self._live.get(row)

    def live_by_id(self, session_id: str) -> SessionState | None:
        """``live(row(session_id))`` in one call (the scheduler names sessions by id)."""
        row = self._rows.get(session_id)
        return None if row is None else self._live.get(row)

    def live_states(self) -> Iterator[SessionState]:
        return iter(self._live.values())

    def state(self, row: int) -> SessionState:
        """The session of ``row``: its live state, or its final state read from the columns."""
        live = self._live.get(row)
        return live if live is not None else self._read(row)

    def status(self, row: int) -> str:
        live = self._live.get(row)
        return live.status if live is not None else STATUSES[self.status_codes[row]]

    def org_rows(self, org_id: str) -> array[int]:
        """The organization's session rows, oldest first."""
        return self._by_org.get(org_id, array("I"))

    def __len__(self) -> int:
        return len(self.ids)

    def export(self, now: float) -> Table:
        """Every session, one row each in creation order, as it is at ``now`` (a live session
        from its working state):

        ``session_id``; ``org_id``, ``key_id``, ``avatar_id``, ``quality``,
        ``billing_surface`` (categories); ``transport`` (its type) and ``transport_<key>`` for
        each other key a transport has (``None`` where a session's has not);
        ``idle_timeout_seconds``, ``max_duration_seconds`` (ints); ``metadata`` (its sorted
        compact JSON, ``None`` when empty); ``embed_id``; ``status``, ``end_reason``,
        ``error_code``, ``worker_id`` (categories); ``billable_seconds`` (as the API shows it
        now); ``created_at``, ``started_at``, ``first_frame_at``, ``ending_at``, ``ended_at``
        (times); ``charged`` (bool); ``barge_ins`` (int)."""
        rows = len(self.ids)
        status, billable = self.status_codes[:rows], self.billable_seconds[:rows]
        moments = {
            name: getattr(self, name)[:rows]
            for name in ("started_at", "first_frame_at", "ending_at", "ended_at")
        }
        workers, worker_codes = list(self.workers.values), self.worker_codes[:rows]
        barge_ins = self.barge_ins[:rows]
        for state in self._live.values():  # not terminal yet: their rows are not written
            row = state.number
            status[row] = _STATUS_CODE[state.status]
            billable[row] = usage_of(state, now)
            barge_ins[row] = state.barge_ins
            for name, column in moments.items():
                value = getattr(state, name)
                column[row] = _NAN if value is None else value
            if state.worker_id is not None:
                worker_codes[row] = len(workers)
                workers.append(state.worker_id)
        profiles, picked = self.profiles.values, self.profile_codes

        def profile(index: int) -> Column:
            return Column("category", picked, labels=[str(p[index]) for p in profiles])

        reasons = [reason or None for reason in self.reasons.values]
        columns = {
            "session_id": Column("text", self.ids),
            "org_id": profile(0),
            "key_id": profile(1),
            "avatar_id": profile(2),
            "quality": profile(3),
            "billing_surface": profile(4),
            **{
                "transport" if key == "type" else f"transport_{key}": Column(
                    "category" if key == "type" else "text",
                    partial(
                        _transport_values,
                        self.transport_kinds,
                        self._transport_kinds.values,
                        self.rooms,
                        key,
                    ),
                )
                for key in TRANSPORT_KEYS
            },
            "idle_timeout_seconds": Column("int", lambda: [profiles[code][5] for code in picked]),
            "max_duration_seconds": Column("int", self.max_durations),
            "metadata": Column("text", partial(_metadata_texts, self.metadata)),
            "embed_id": Column("text", self.embeds),
            "status": Column("category", status, labels=STATUSES),
            "end_reason": Column("category", self.end_reason_codes[:rows], labels=reasons),
            "error_code": Column("category", self.error_codes[:rows], labels=reasons),
            "worker_id": Column("category", worker_codes, labels=[w or None for w in workers]),
            "billable_seconds": Column("int", billable),
            "created_at": Column("time", self.created_at),
            **{name: Column("time", column) for name, column in moments.items()},
            "charged": Column("bool", self.charged[:rows]),
            "barge_ins": Column("int", barge_ins),
        }
        return Table(rows, columns)

    def _transport(self, row: int) -> dict[str, Any]:
        keys, values = self._transport_kinds[self.transport_kinds[row]]
        transport = dict(zip(keys, values, strict=True))
        if _ROOM in transport:
            transport[_ROOM] = self.rooms[row]
        return transport

    def _read(self, row: int) -> SessionState:
        metadata = self.metadata[row]
        worker = self.workers[self.worker_codes[row]]
        org_id, key_id, avatar_id, quality, surface, idle, resets = self.profiles[
            self.profile_codes[row]
        ]
        return SessionState(
            id=self.ids[row],
            number=row,
            org_id=org_id,
            key_id=key_id,
            key_secret="",
            avatar_id=avatar_id,
            quality=quality,
            billing_surface=surface,
            transport=self._transport(row),
            worker_token=None,
            idle_timeout_seconds=idle,
            max_duration_seconds=self.max_durations[row],
            metadata={} if metadata is None else metadata,
            embed_id=self.embeds.get(row),
            resets_on_silence=resets,
            created_at=self.created_at[row],
            status=STATUSES[self.status_codes[row]],
            started_at=_optional(self.started_at[row]),
            first_frame_at=_optional(self.first_frame_at[row]),
            ending_at=_optional(self.ending_at[row]),
            ended_at=_optional(self.ended_at[row]),
            end_reason=self.reasons[self.end_reason_codes[row]] or None,
            error_code=self.reasons[self.error_codes[row]] or None,
            worker_id=worker or None,
            final_billable_seconds=self.billable_seconds[row],
            charged=bool(self.charged[row]),
            barge_ins=self.barge_ins[row],
        )


# The columns an export builds when read, from the lists it was given (not the store's
# attributes, which a release replaces): a table outlives its store's release.


def _transport_values(
    codes: array[int],
    kinds: list[_TransportKind],
    rooms: list[str | None],
    key: str,
) -> dict[int, Any]:
    """The value of the transports' ``key``, by row (the sessions whose transport has it)."""
    if key == _ROOM:
        return {row: room for row, room in enumerate(rooms) if room is not None}
    found: dict[int, Any] = {}
    where = [keys.index(key) if key in keys else -1 for keys, _ in kinds]
    for row, code in enumerate(codes):
        at = where[code]
        if at >= 0:
            found[row] = kinds[code][1][at]
    return found


def _metadata_texts(metadata: list[dict[str, Any] | None]) -> dict[int, str]:
    """Each session's metadata as sorted compact JSON, by row (the sessions that have some)."""
    return {
        row: json.dumps(value, sort_keys=True, separators=(",", ":"))
        for row, value in enumerate(metadata)
        if value is not None
    }
