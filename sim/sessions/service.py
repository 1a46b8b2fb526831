"""The realtime session service: create, list, retrieve, end, and the simulator's controls.

It owns every session of the platform and is the only code that changes one. Each change goes
through ``_move``, which consults the declared transition table (``sim.lifecycle``), and through
``_fire`` for the effects a transition carries: timestamps, events (GAP-EV-1), the worker, the
concurrency counts and, exactly once per started session, the billing hand-off (GAP-SES-3).

Rate limits and idempotency are applied around this service by ``sim.platform``; everything else
about a create happens here, in this order: body validation, the avatar, the per-key then
per-organization caps, credits, admission (``prepare_create``: nothing is stored), then the
session itself (``commit``: one unit of ``Journal.atomic``, so a failure half-way leaves no
session, index entry, cap slot or queued job behind, and no event).
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Callable
from typing import Any, Final, Literal

from sim.accounts import AccountRegistry, Caller
from sim.config import Distribution
from sim.errors import Conflict, NotFound, Unprocessable
from sim.journal import Prepared, discard
from sim.kernel import Kernel
from sim.lifecycle import STATUSES, SessionStatus, Trigger, next_status
from sim.pagination import page, validate_limit
from sim.ports import AvatarLookup, BillingPort, SessionUsage
from sim.sessions.audio import AudioKind, AudioTrack
from sim.sessions.cost import ScheduleCounter
from sim.sessions.faults import FaultState, SlowStartup
from sim.sessions.heartbeat import HeartbeatTrack
from sim.sessions.limits import ConcurrencyCaps
from sim.sessions.pipecat import RelayCredentials, issue_relay
from sim.sessions.records import (
    Session,
    SessionState,
    Transition,
    final_usage_seconds,
    render_session,
    snapshot,
    usage_of,
)
from sim.sessions.scheduler import PoolStatus, Scheduler, Worker
from sim.sessions.validation import parse_pipecat_request, parse_session_request
from sim.sessions.worker import SessionRuntime

__all__ = ["BILLING_SURFACES", "SessionService"]

BILLING_SURFACES: Final[tuple[str, ...]] = (
    "api",
    "playground",
    "embed",
    "share",
    "public_demo",
    "pipecat",
    "agora",
    "video_generation",
)

_MESSAGES: Final[dict[str, str]] = {
    "no_capacity": "No worker could take the session within the start-up timeout.",
    "worker_lost": "The worker hosting the session stopped responding.",
}


class SessionService:
    def __init__(
        self,
        kernel: Kernel,
        accounts: AccountRegistry,
        billing: BillingPort,
        avatars: AvatarLookup,
    ) -> None:
        self._kernel = kernel
        self._config = kernel.config
        self._clock = kernel.clock
        self._accounts = accounts
        self._billing = billing
        self._avatars = avatars
        self._states: dict[str, SessionState] = {}
        self._by_org: dict[str, list[str]] = {}
        self._relays: dict[str, RelayCredentials] = {}
        self._losing: set[str] = set()
        self._caps = ConcurrencyCaps(self._config.limits.concurrent_sessions_per_key)
        self._counter = ScheduleCounter.install(kernel.clock.env)
        self._faults = FaultState(kernel.streams.stream("faults"))
        self._runtime = SessionRuntime(
            kernel.clock.env,
            self._config,
            boot_rng=kernel.streams.stream("worker_boot"),
            first_frame_rng=kernel.streams.stream("first_frame"),
            faults=self._faults,
            fire=self._fire,
        )
        self._scheduler = Scheduler(
            kernel.clock.env,
            self._config.scheduler,
            self._config.limits.startup_timeout_seconds,
            place=self._place,
            expire=self._expire,
        )

    # -- contract operations -----------------------------------------------------------------

    def create(
        self,
        caller: Caller,
        body: Any,
        *,
        billing_surface: str = "api",
        embed_id: str | None = None,
    ) -> dict[str, Any]:
        """``POST /v1/sessions``: a session in ``queued`` (SES-ST-1) or a domain error."""
        return self.prepare_create(
            caller, body, billing_surface=billing_surface, embed_id=embed_id
        ).commit()

    def prepare_create(
        self,
        caller: Caller,
        body: Any,
        *,
        billing_surface: str = "api",
        embed_id: str | None = None,
    ) -> Prepared:
        """Every check of a create, in order (GAP-SES-11); nothing is stored until ``commit``."""
        caller.require_unrestricted()
        if billing_surface not in BILLING_SURFACES:
            raise Unprocessable(
                "validation.enum",
                f"Unknown billing surface {billing_surface!r}.",
                param="billing_surface",
            )
        request = parse_session_request(body, self._config.limits, self._config.sessions)
        self._admissible(caller, request.avatar_id)
        transport = request.transport

        def commit() -> dict[str, Any]:
            state = self._open(
                caller,
                avatar_id=request.avatar_id,
                quality=request.quality,
                idle_timeout=request.idle_timeout_seconds,
                max_duration=request.max_duration_seconds,
                transport=transport.rendered(),
                worker_token=transport.worker_token,
                metadata=request.metadata,
                billing_surface=billing_surface,
                embed_id=embed_id,
                resets_on_silence=transport.audio_source == "track",
            )
            return self._render(state)

        return Prepared(self._atomic(commit))

    def create_pipecat(self, caller: Caller, body: Any) -> dict[str, Any]:
        """``POST /v1/pipecat/sessions``: a session plus short-lived relay credentials."""
        return self.prepare_pipecat(caller, body).commit()

    def prepare_pipecat(self, caller: Caller, body: Any) -> Prepared:
        """Every check of a pipecat create; nothing is stored until ``commit``."""
        caller.require_unrestricted()
        request = parse_pipecat_request(body, self._config.limits, self._config.sessions)
        self._admissible(caller, request.avatar_id)

        def commit() -> dict[str, Any]:
            # The relay streams continuous audio frames, silence included, like a published track.
            state = self._open(
                caller,
                avatar_id=request.avatar_id,
                quality=request.quality,
                idle_timeout=request.idle_timeout_seconds,
                max_duration=request.max_duration_seconds,
                transport={"type": "pipecat"},
                worker_token=None,
                metadata={},
                billing_surface="pipecat",
                embed_id=None,
                resets_on_silence=True,
            )
            relay = issue_relay(state.id, self._clock, self._kernel.ids, self._config.sessions)
            self._kernel.journal.on_undo(lambda: self._relays.pop(state.id, None))
            self._relays[state.id] = relay
            return {
                "object": "pipecat.session",
                "relay": relay.render(self._clock),
                "session": self._render(state),
            }

        return Prepared(self._atomic(commit))

    def retrieve(self, caller: Caller, session_id: str) -> dict[str, Any]:
        caller.require_unrestricted()
        return self._render(self._owned(caller, session_id))

    def list(
        self, caller: Caller, *, limit: int, starting_after: str | None, status: str | None
    ) -> dict[str, Any]:
        """Newest first; the cursor is positioned in the unfiltered list (GAP-SES-6)."""
        caller.require_unrestricted()
        limits = self._config.limits
        validate_limit(limit, limits.page_size_min, limits.page_size_max)
        if status is not None and status not in STATUSES:
            raise Unprocessable(
                "validation.enum",
                f"`status` must be one of: {', '.join(STATUSES)}.",
                param="status",
            )
        ids = list(reversed(self._by_org.get(caller.org_id, [])))
        if starting_after is not None:
            try:
                ids = ids[ids.index(starting_after) + 1 :]
            except ValueError:
                raise Unprocessable(
                    "validation.cursor",
                    "starting_after does not name an item of this list.",
                    param="starting_after",
                ) from None
        states = [self._states[i] for i in ids]
        if status is not None:
            states = [s for s in states if s.status == status]
        return page(
            states, limit=limit, starting_after=None, cursor_of=lambda s: s.id, render=self._render
        )

    def end(self, caller: Caller, session_id: str) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/end``: idempotent (SES-ST-3, SES-ST-4, SES-ST-5)."""
        caller.require_unrestricted()
        state = self._owned(caller, session_id)
        if state.status in ("queued", "starting"):
            if state.status == "queued":
                self._scheduler.withdraw(state.id)
            self._finish(state, "end")
        elif state.status == "running":
            self._move(state, "end")
            state.ending_at = self._clock.now
            drain = self._runtime.drain(state)
            self._worker_free_by(state, self._clock.now + drain)
            self._emit("session.ending", state, drain_seconds=drain)
        return self._render(state)

    # -- simulator-side controls -------------------------------------------------------------

    def inject_audio(
        self, session_id: str, *, kind: Literal["speech", "silence"], duration: float
    ) -> None:
        """The client publishes ``duration`` seconds of speech or silence (GAP-SES-5).

        Only a running session's worker listens; audio sent before the first frame or after an
        end is not received and changes nothing.
        """
        state = self._get(session_id)
        if kind not in ("speech", "silence"):
            raise Unprocessable(
                "validation.enum", "`kind` must be speech or silence.", param="kind"
            )
        if duration < 0:
            raise Unprocessable("validation.range", "`duration` must be >= 0.", param="duration")
        if state.status != "running" or state.audio is None:
            return
        audio_kind: AudioKind = kind
        state.audio.receive(self._clock.now, audio_kind, duration)

    def clear_buffer(self, session_id: str) -> None:
        """Barge-in through ``lk.clear_buffer``: drop the worker's buffered output."""
        state = self._get(session_id)
        if state.status != "running" or state.audio is None:
            return
        dropped = state.audio.clear(self._clock.now)
        state.barge_ins += 1
        self._emit(
            "session.barge_in",
            state,
            dropped_seconds=dropped,
            rpc=self._config.sessions.barge_in_rpc,
        )
        self._runtime.check(state)  # cutting the timeline can bring the idle deadline forward

    def rpc(self, session_id: str, method: str) -> None:
        """A worker RPC by name; the mock worker answers only ``lk.clear_buffer`` (RES-TRN-2)."""
        if method != self._config.sessions.barge_in_rpc:
            raise Unprocessable(
                "validation.enum", f"Unknown worker RPC {method!r}.", param="method"
            )
        self.clear_buffer(session_id)

    @property
    def published_tracks(self) -> tuple[str, str]:
        """The track names a running worker publishes (video, audio)."""
        sessions = self._config.sessions
        return sessions.video_track_name, sessions.audio_track_name

    # -- faults (SIM-9) ----------------------------------------------------------------------

    def crash_worker(self, *, session_id: str | None = None, worker_id: str | None = None) -> str:
        """Crash the worker hosting ``session_id`` (or the worker ``worker_id``).

        Its session fails with ``worker_lost`` (or, while draining, ends as the customer asked),
        billed up to the crash and only once; the worker returns after
        ``worker_restart_seconds``. Returns the crashed worker's id.
        """
        if (session_id is None) == (worker_id is None):
            raise ValueError("name exactly one of session_id or worker_id")
        if session_id is not None:
            state = self._get(session_id)
            if state.worker_id is None or state.status not in ("starting", "running", "ending"):
                raise Conflict("session.no_worker", f"Session {session_id} is not on a worker.")
            worker_id = state.worker_id
        assert worker_id is not None
        try:
            self._scheduler.worker(worker_id)
        except KeyError:
            raise NotFound("worker.not_found", f"No worker {worker_id}.") from None
        hosted = self._scheduler.crash(worker_id, self._config.scheduler.worker_restart_seconds)
        self._faults.crashes += 1
        if hosted is not None:
            self._fire(self._states[hosted], "worker_crash")
        return worker_id

    def set_capacity(self, workers: int) -> None:
        """Grow or shrink the worker pool (capacity loss: queued jobs then time out)."""
        self._scheduler.set_capacity(workers)

    def slow_startup(
        self, extra: float | Distribution, *, duration: float | None = None
    ) -> SlowStartup:
        """Add ``extra`` seconds (or a distribution) to every worker boot for ``duration``
        seconds from now (``None``: until ``clear_slow_startup``)."""
        until = None if duration is None else self._clock.now + duration
        return self._faults.slow_startup(extra, until)

    def clear_slow_startup(self) -> None:
        self._faults.clear_slow_startup()

    def lose_heartbeats(self, session_id: str, duration: float) -> float | None:
        """Drop the running session's heartbeats for ``duration`` seconds from now.

        ``usage`` freezes at the last received heartbeat; when the silence exceeds
        ``heartbeat_loss_limit_seconds`` the session fails with ``worker_lost``. Returns the
        moment the worker will be declared lost, or ``None`` if it survives the loss.
        """
        state = self._get(session_id)
        if state.status != "running" or state.heartbeats is None:
            raise Conflict("session.not_running", f"Session {session_id} is not running.")
        if duration <= 0:
            raise Unprocessable("validation.range", "`duration` must be > 0.", param="duration")
        limit = self._config.sessions.heartbeat_loss_limit_seconds
        lost_at = state.heartbeats.lose(self._clock.now, duration, limit)
        self._losing.add(state.id)
        if lost_at is not None:
            current = state.heartbeat_lost_at
            state.heartbeat_lost_at = lost_at if current is None else min(current, lost_at)
            self._runtime.check(state)
        return lost_at

    # -- views for collectors, the status endpoint and tests -----------------------------------

    def sessions(self) -> builtins.list[Session]:
        """Immutable snapshots of every session, in creation order."""
        now = self._clock.now
        fps = self._config.sessions.frames_per_second
        return [snapshot(s, now, fps, self.published_tracks) for s in self._states.values()]

    def render(self, session_id: str) -> dict[str, Any]:
        """The contract shape of any session, without a caller (admin API, scenarios)."""
        return self._render(self._get(session_id))

    def session(self, session_id: str) -> Session:
        return snapshot(
            self._get(session_id),
            self._clock.now,
            self._config.sessions.frames_per_second,
            self.published_tracks,
        )

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

    def workers(self) -> builtins.list[Worker]:
        return [copy.copy(w) for w in self._scheduler.workers()]

    @property
    def scheduled_events(self) -> int:
        """Events scheduled on the platform's environment so far (the cost yardstick)."""
        return self._counter.count

    def _heartbeats_failing(self, now: float) -> bool:
        self._losing = {i for i in self._losing if self._states[i].status in ("running", "ending")}
        for session_id in self._losing:
            heartbeats = self._states[session_id].heartbeats
            if heartbeats is not None and heartbeats.losing(now):
                return True
        return False

    def degraded(self) -> bool:
        """Capacity below configuration, or a fault active (GAP-PUB-1)."""
        pool = self._scheduler.status()
        now = self._clock.now
        return (
            pool.capacity < self._config.scheduler.workers
            or pool.restarting > 0
            or self._faults.slow_active(now)
            or self._heartbeats_failing(now)
        )

    def platform_status(self) -> dict[str, Any]:
        """``GET /v1/status`` (GAP-PUB-1), from the fleet's point of view."""
        pool = self._scheduler.status()
        if pool.idle + pool.busy == 0:
            status = "major_outage"
        elif self.degraded():
            status = "degraded"
        else:
            status = "operational"
        return {
            "object": "status",
            "status": status,
            "updated_at": self._clock.timestamp(),
            "components": [
                {"name": "api", "status": "operational"},
                {"name": "realtime_sessions", "status": status},
            ],
        }

    # -- internals: lookup, creation ---------------------------------------------------------

    def _get(self, session_id: str) -> SessionState:
        state = self._states.get(session_id)
        if state is None:
            raise NotFound("session.not_found", f"No session {session_id}.")
        return state

    def _owned(self, caller: Caller, session_id: str) -> SessionState:
        """Another organization's session does not exist for the caller (AUTH-7)."""
        state = self._states.get(session_id)
        if state is None or state.org_id != caller.org_id:
            raise NotFound("session.not_found", f"No session {session_id}.")
        return state

    def _render(self, state: SessionState) -> dict[str, Any]:
        return render_session(state, self._clock, self._config.sessions.frames_per_second)

    def _admissible(self, caller: Caller, avatar_id: str) -> None:
        """The checks of a create after its body, in order: avatar, caps, credits, admission."""
        org_id = caller.org_id
        self._avatars.require_usable(org_id, avatar_id)
        self._caps.check(caller.key.secret, org_id, self._accounts.concurrency_limit(org_id))
        self._billing.ensure_can_start_session(org_id)
        self._scheduler.admit()

    def _atomic(self, commit: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        """``commit`` as one unit of work: if it fails half-way, what it stored is undone."""

        def run() -> dict[str, Any]:
            with self._kernel.journal.atomic():
                return commit()

        return run

    def _open(
        self,
        caller: Caller,
        *,
        avatar_id: str,
        quality: str,
        idle_timeout: int,
        max_duration: int,
        transport: dict[str, Any],
        worker_token: str | None,
        metadata: dict[str, Any],
        billing_surface: str,
        embed_id: str | None,
        resets_on_silence: bool,
    ) -> SessionState:
        """Store an admitted session and queue it; each change registers its undo."""
        org_id = caller.org_id
        journal = self._kernel.journal
        plan = self._config.billing.plan(self._accounts.organization(org_id).plan_key)
        now = self._clock.now
        state = SessionState(
            id=self._kernel.ids.new("session"),
            org_id=org_id,
            key_id=caller.key_id,
            key_secret=caller.key.secret,
            avatar_id=avatar_id,
            quality=quality,
            billing_surface=billing_surface,
            transport=transport,
            worker_token=worker_token,
            idle_timeout_seconds=idle_timeout,
            max_duration_seconds=min(max_duration, plan.max_session_duration_seconds),
            metadata=copy.deepcopy(metadata),
            embed_id=embed_id,
            resets_on_silence=resets_on_silence,
            created_at=now,
        )
        state.history.append(Transition(now, None, "create", next_status(None, "create")))
        # Each undo is registered before its change, so a change that fails half-way is undone
        # too; each undo is safe to run whether or not its change happened.
        journal.on_undo(lambda: self._states.pop(state.id, None))
        self._states[state.id] = state
        org_sessions = self._by_org.setdefault(org_id, [])
        journal.on_undo(lambda: discard(org_sessions, state.id))
        org_sessions.append(state.id)
        self._caps.add(state.key_secret, org_id)
        journal.on_undo(lambda: self._caps.remove(state.key_secret, org_id))
        self._move(state, "admit")
        self._emit("session.queued", state)
        journal.on_undo(lambda: self._scheduler.withdraw(state.id))
        self._scheduler.enqueue(state.id, now)
        return state

    # -- internals: transitions and their effects --------------------------------------------

    def _move(self, state: SessionState, trigger: Trigger) -> SessionStatus:
        """The one place a status changes, and only along a row of the table."""
        before = state.status
        after = next_status(before, trigger)
        state.status = after
        state.generation += 1
        state.armed_at = None
        state.history.append(Transition(self._clock.now, before, trigger, after))
        if state.terminal:
            self._caps.remove(state.key_secret, state.org_id)
        return after

    def _emit(self, type_: str, state: SessionState, **extra: Any) -> None:
        data: dict[str, Any] = {"object": self._render(state), **extra}
        self._kernel.events.emit(type_, state.org_id, data)

    def _worker_free_by(self, state: SessionState, moment: float) -> None:
        if state.worker_id is None:
            return
        worker = self._scheduler.find(state.worker_id)
        if worker is not None and worker.session_id == state.id:
            worker.free_by = moment

    def _place(self, session_id: str, worker: Worker) -> None:
        state = self._states[session_id]
        self._move(state, "place")
        state.started_at = self._clock.now
        state.worker_id = worker.id
        self._emit("session.starting", state, worker_id=worker.id)
        self._runtime.boot(state)

    def _expire(self, session_id: str) -> None:
        self._finish(self._states[session_id], "startup_timeout")

    def _fire(self, state: SessionState, trigger: Trigger) -> None:
        """Apply a worker-side trigger (first frame, deadlines, drain, crash, loss)."""
        if trigger == "first_frame":
            now = self._clock.now
            self._move(state, "first_frame")
            state.first_frame_at = now
            state.audio = AudioTrack.start(now, resets_on_silence=state.resets_on_silence)
            state.heartbeats = HeartbeatTrack(now, self._config.sessions.heartbeat_interval_seconds)
            self._worker_free_by(
                state, now + state.max_duration_seconds + self._config.sessions.drain_max_seconds
            )
            self._emit("session.first_frame", state, tracks=list(self.published_tracks))
            self._runtime.check(state)
            return
        if trigger == "heartbeat_lost" and state.worker_id is not None:
            # A worker the platform declared lost is recycled like a crashed one.
            self._scheduler.crash(state.worker_id, self._config.scheduler.worker_restart_seconds)
        self._finish(state, trigger)

    def _finish(self, state: SessionState, trigger: Trigger) -> None:
        """Move to a terminal status and apply the end-of-session effects exactly once."""
        status = self._move(state, trigger)
        now = self._clock.now
        state.ended_at = now
        state.final_billable_seconds = final_usage_seconds(state, now)
        if state.worker_id is not None:
            self._scheduler.release(state.worker_id, state.id)
        if status == "ended":
            state.end_reason = (
                trigger if trigger in ("max_duration", "idle_timeout") else ("client_request")
            )
            self._emit("session.ended", state, reason=state.end_reason)
        elif status == "failed":
            code = "no_capacity" if trigger == "startup_timeout" else "worker_lost"
            state.error_code, state.error_message = code, _MESSAGES[code]
            self._emit("session.failed", state, code=code)
        else:
            self._emit("session.canceled", state)
        if state.first_frame_at is not None and not state.charged:
            self._charge(state, now)

    def _charge(self, state: SessionState, now: float) -> None:
        state.charged = True
        seconds, frames = usage_of(state, now, self._config.sessions.frames_per_second)
        self._emit("session.usage", state, usage={"billable_seconds": seconds, "frames": frames})
        self._billing.charge_session(
            SessionUsage(
                session_id=state.id,
                org_id=state.org_id,
                quality=state.quality,
                billing_surface=state.billing_surface,
                billable_seconds=seconds,
                frames=frames,
                ended_at=now,
                avatar_id=state.avatar_id,
                embed_id=state.embed_id,
            )
        )
