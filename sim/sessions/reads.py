"""Reading sessions: lookup, ``retrieve``, ``list`` and the views collectors, the status endpoint
and tests use. Nothing here changes a session; ``SessionService`` (``sim.sessions.service``), which
owns every change, inherits these so its callers find one object.

Why apart: the service's changes (the transition table's effects) read best without the read side
between them, and the two together passed the project's module size.
"""

from __future__ import annotations

import builtins
import copy
from typing import Any

from sim.accounts import Caller
from sim.clock import Clock
from sim.config import SimConfig
from sim.errors import NotFound, Unprocessable
from sim.lifecycle import STATUSES, transition
from sim.pagination import paginate
from sim.sessions.history import TransitionLog
from sim.sessions.pipecat import RelayCredentials
from sim.sessions.records import Session, SessionState, snapshot
from sim.sessions.scheduler import PoolMeter, PoolStatus, Scheduler, Worker
from sim.sessions.store import SessionStore

__all__ = ["SessionReads"]

#: The status a create answers its session in: where ``admit`` takes a created one (a session is
#: placed on a worker later, never within its create).
_ANSWERED = transition(transition(None, "create").target, "admit").target


class SessionReads:
    """The read side of ``SessionService``: every attribute below is set by its constructor."""

    _store: SessionStore
    _history: TransitionLog
    _scheduler: Scheduler[SessionState]
    _relays: dict[str, RelayCredentials]
    _clock: Clock
    _config: SimConfig
    _fps: int

    # -- contract reads --------------------------------------------------------------------

    def created(self, session_id: str) -> dict[str, Any]:
        """The body the create of ``session_id`` answered, rendered again now: the session as
        it was then (queued, no usage), from what its record keeps and never changes.

        Why: a caller that reads no body is answered only the id (``sim.operations``' unread
        forms), and an idempotent replay of its create must still give the full body; almost no
        key ever comes back, so the body is rendered only then."""
        row = self._store.row(session_id)
        if row is None:
            raise NotFound("session.not_found", f"No session {session_id}.")
        return self._store.state(row).to_resource(
            self._clock, self._fps, status=_ANSWERED, usage_seconds=0
        )

    def retrieve(self, caller: Caller, session_id: str) -> dict[str, Any]:
        caller.require_unrestricted()
        return self._render(self._owned(caller, session_id))

    def list(
        self, caller: Caller, *, limit: int, starting_after: str | None, status: str | None
    ) -> dict[str, Any]:
        """Newest first; the cursor is positioned in the unfiltered list (GAP-SES-6)."""
        caller.require_unrestricted()
        if status is not None and status not in STATUSES:
            raise Unprocessable(
                "validation.enum",
                f"`status` must be one of: {', '.join(STATUSES)}.",
                param="status",
            )
        store = self._store
        return paginate(
            store.org_rows(caller.org_id)[::-1],
            limit=limit,
            starting_after=starting_after,
            limits=self._config.limits,
            cursor_of=lambda row: store.ids[row],
            render=lambda row: self._render(store.state(row)),
            keep=None if status is None else (lambda row: store.status(row) == status),
        )

    # -- views for collectors, the status endpoint and tests -----------------------------------

    @property
    def published_tracks(self) -> tuple[str, str]:
        """The track names a running worker publishes (video, audio)."""
        sessions = self._config.sessions
        return sessions.video_track_name, sessions.audio_track_name

    @property
    def store(self) -> SessionStore:
        """Every session, live and finished, as columns (for bulk collectors)."""
        return self._store

    def sessions(self) -> builtins.list[Session]:
        """Immutable snapshots of every session, in creation order."""
        return [self._snapshot(row) for row in range(len(self._store))]

    def session(self, session_id: str) -> Session:
        return self._snapshot(self._get(session_id).number)

    def render(self, session_id: str) -> dict[str, Any]:
        """The contract shape of any session, without a caller (admin API, scenarios)."""
        return self._render(self._get(session_id))

    def relay(self, session_id: str) -> RelayCredentials:
        try:
            return self._relays[session_id]
        except KeyError:
            raise NotFound("session.not_found", f"No pipecat session {session_id}.") from None

    def queued(self) -> builtins.list[str]:
        """Ids of the sessions waiting for a worker, oldest first."""
        return self._scheduler.queued()

    def pool_status(self) -> PoolStatus:
        return self._scheduler.status()

    def pool_meter(self) -> PoolMeter:
        """The pool's running worker-seconds and its peaks since the previous reading
        (``Scheduler.meter``: the reading restarts the peaks; one sampler reads it)."""
        return self._scheduler.meter()

    def workers(self) -> builtins.list[Worker]:
        return [copy.copy(w) for w in self._scheduler.workers()]

    # -- lookup and rendering ----------------------------------------------------------------

    def _get(self, session_id: str) -> SessionState:
        state = self._store.live_by_id(session_id)  # the live ones first
        if state is not None:
            return state
        row = self._store.row(session_id)
        if row is None:
            raise NotFound("session.not_found", f"No session {session_id}.")
        return self._store.state(row)

    def _owned(self, caller: Caller, session_id: str) -> SessionState:
        """Another organization's session does not exist for the caller (AUTH-7)."""
        state = self._store.live_by_id(session_id)
        if state is None:
            row = self._store.row(session_id)
            state = None if row is None else self._store.state(row)
        if state is None or state.org_id != caller.org_id:
            raise NotFound("session.not_found", f"No session {session_id}.")
        return state

    def _render(self, state: SessionState, usage_seconds: int | None = None) -> dict[str, Any]:
        """The session as the API shows it now (``usage_seconds``: its usage, when the caller
        knows it)."""
        return state.to_resource(self._clock, self._fps, usage_seconds=usage_seconds)

    def _snapshot(self, row: int) -> Session:
        state = self._store.state(row)
        return snapshot(
            state, self._clock.now, self._fps, self.published_tracks, self._history.of(state)
        )

    def _live(self, session_id: str) -> SessionState:
        state = self._store.live_by_id(session_id)
        assert state is not None  # the scheduler only holds sessions that are not terminal
        return state
