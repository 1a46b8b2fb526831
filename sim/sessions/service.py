"""The realtime session service: create, end, and the audio a client sends (its reads, list and
retrieve among them, in ``sim.sessions.reads``, which it inherits).

It owns every session of the platform and is the only code that changes one. Each change goes
through ``_move``, which takes a row of the declared transition table (``sim.lifecycle``): the
row names the new status, the event to publish and, for a terminal row, the end reason or error
code. ``_fire`` and ``_finish`` apply the effects a transition carries: timestamps, events
(GAP-EV-1), the worker, the concurrency counts and, exactly once per started session, the billing
hand-off (GAP-SES-3).

Rate limits and idempotency are applied around this service by ``sim.platform``; everything else
about a create happens here, in this order: body validation, the avatar, the per-key then
per-organization caps, credits, admission (``prepare_create``: nothing is stored), then the
session itself (``commit``, inside its caller's unit of ``Journal.atomic``: a failure half-way
leaves no session, store row, index entry, cap slot or queued job behind, and no event).

Records: sessions live in a ``SessionStore`` (finished ones as columns), their transitions in a
``TransitionLog``, and their events are published with the few raw values their payload needs
(the session's row, status and usage at that moment), rendered when read.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Literal

from sim import tuples
from sim.accounts import AccountRegistry, Caller
from sim.config import BILLING_SURFACES
from sim.errors import Unprocessable
from sim.journal import Prepared, committed
from sim.kernel import Kernel
from sim.lifecycle import ROWS_FROM, SessionTransition, Trigger, transition
from sim.ports import AvatarLookup, BillingPort, SessionUsage
from sim.sessions.audio import AudioKind, AudioTrack, TalkSpurts
from sim.sessions.events import SessionEvents
from sim.sessions.faults import FaultState, FleetFaults
from sim.sessions.heartbeat import HeartbeatTrack, billable_seconds
from sim.sessions.history import TransitionLog
from sim.sessions.limits import ConcurrencyCaps
from sim.sessions.pipecat import RelayCredentials, issue_relay
from sim.sessions.reads import SessionReads
from sim.sessions.records import SessionState, usage_of
from sim.sessions.scheduler import Scheduler, Worker
from sim.sessions.store import SessionStore
from sim.sessions.validation import (
    PipecatRequest,
    SessionRequest,
    parse_pipecat_request,
    parse_session_request,
)
from sim.sessions.worker import SessionRuntime

__all__ = ["BILLING_SURFACES", "SessionService"]

#: The table's row for ``create`` (into the status a session is created in), read once.
_CREATE = transition(None, "create")


class SessionService(SessionReads):
    def __init__(
        self,
        kernel: Kernel,
        accounts: AccountRegistry,
        billing: BillingPort,
        avatars: AvatarLookup,
    ) -> None:
        self._kernel = kernel
        self._journal = kernel.journal
        self._ids = kernel.ids
        self._config = kernel.config
        self._settings = kernel.settings
        self._clock = kernel.clock
        self._fps = kernel.settings.frames_per_second
        self._accounts = accounts
        self._billing = billing
        self._avatars = avatars
        self._store = SessionStore()
        self._history = TransitionLog(keep=kernel.config.history.transitions)
        self._relays: dict[str, RelayCredentials] = {}
        self._caps = ConcurrencyCaps(kernel.settings.concurrent_sessions_per_key)
        fault_state = FaultState(kernel.streams.stream("faults"))
        self._runtime = SessionRuntime(
            kernel.clock,
            self._config,
            kernel.settings,
            boot_rng=kernel.streams.stream("worker_boot"),
            first_frame_rng=kernel.streams.stream("first_frame"),
            faults=fault_state,
            fire=self._fire,
        )
        self._scheduler: Scheduler[SessionState] = Scheduler(
            kernel.clock,
            self._config.scheduler,
            kernel.settings.startup_timeout_seconds,
            place=self._place,
            expire=self._expire,
            defer=kernel.journal.defer,
        )
        self.faults = FleetFaults(
            kernel.clock,
            self._config,
            fault_state,
            self._scheduler,
            session=self._get,
            hosted=self._live,
            fire=self._fire,
            check=self._runtime.check,
        )
        self.events = SessionEvents(
            kernel.events,
            self._store,
            kernel.clock,
            frames_per_second=self._fps,
            tracks=self.published_tracks,
            rpc=self._config.sessions.barge_in_rpc,
        )
        self._event_log = kernel.events
        self._event_handles = self.events.handles
        self._moves_kept = self._history.keep

    # -- contract operations -----------------------------------------------------------------

    def prepare_create(
        self,
        caller: Caller,
        body: Any,
        *,
        billing_surface: str = "api",
        embed_id: str | None = None,
        render: bool = True,
    ) -> Prepared:
        """``POST /v1/sessions``: every check of a create, in order (GAP-SES-11); nothing is
        stored until ``commit``, which answers the session in ``queued`` (SES-ST-1), or only its
        ``id`` with ``render=False`` (for a caller that reads nothing else; ``created`` renders
        the full answer later, the same body)."""
        caller.require_unrestricted()
        if billing_surface not in BILLING_SURFACES:
            raise Unprocessable(
                "validation.enum",
                f"Unknown billing surface {billing_surface!r}.",
                param="billing_surface",
            )
        request = parse_session_request(body, self._settings, self._config.limits)
        self._admissible(caller, request.avatar_id)
        transport = request.transport

        def commit() -> dict[str, Any]:
            state = self._open(
                caller,
                request,
                transport=transport.rendered(),
                worker_token=transport.worker_token,
                metadata=request.metadata,
                billing_surface=billing_surface,
                embed_id=embed_id,
                resets_on_silence=transport.audio_source == "track",
            )
            return self._render(state, 0) if render else {"id": state.id}  # no usage yet

        return tuples.new(Prepared, (commit,))

    create = committed(prepare_create)

    def prepare_pipecat(self, caller: Caller, body: Any) -> Prepared:
        """``POST /v1/pipecat/sessions``: every check of a pipecat create; nothing is stored
        until ``commit``, which answers a session plus short-lived relay credentials."""
        caller.require_unrestricted()
        request = parse_pipecat_request(body, self._settings)
        self._admissible(caller, request.avatar_id)

        def commit() -> dict[str, Any]:
            # The relay streams continuous audio frames, silence included, like a track.
            state = self._open(
                caller,
                request,
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
                "relay": relay.to_resource(self._clock),
                "session": self._render(state),
            }

        return Prepared(commit)

    create_pipecat = committed(prepare_pipecat)

    def end(self, caller: Caller, session_id: str, *, render: bool = True) -> dict[str, Any]:
        """``POST /v1/sessions/{id}/end``: idempotent (SES-ST-3, SES-ST-4, SES-ST-5)."""
        caller.require_unrestricted()
        state = self._owned(caller, session_id)
        if state.status in ("queued", "starting"):
            if state.status == "queued":
                self._scheduler.withdraw(state.id)
            self._finish(state, "end", self._clock.now)
        elif state.status == "running":
            now = self._clock.now
            row = self._move(state, "end", now)
            state.ending_at = now
            drain = self._runtime.drain(state, now)
            self._worker_free_by(state, now + drain)
            self._emit(row.event, state, now, drain, usage_of(state, now))
        # A caller that reads no body (``Platform.call``'s ``reads_body``) asks ``render=False``
        # and gets the id alone, not a resource nobody reads.
        return self._render(state) if render else {"id": state.id}

    # -- the audio a client sends ------------------------------------------------------------

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

    def play_audio(
        self,
        session_id: str,
        pattern: TalkSpurts,
        *,
        rng: random.Random,
        until: float | None = None,
    ) -> None:
        """The client publishes a talk-spurt ``pattern`` from now until ``until`` (simulated
        seconds; ``None``: until it ends the session), in one call whatever its length
        (GAP-SES-5). ``rng`` draws the pattern's phase when it is observed. Like
        ``inject_audio``, only a running session listens."""
        state = self._get(session_id)
        if state.status != "running" or state.audio is None:
            return
        state.audio.play(self._clock.now, pattern, rng, until)

    def clear_buffer(self, session_id: str) -> None:
        """Barge-in through ``lk.clear_buffer``: drop the worker's buffered output."""
        state = self._get(session_id)
        if state.status != "running" or state.audio is None:
            return
        now = self._clock.now
        dropped = state.audio.clear(now)
        state.barge_ins += 1
        self._emit("session.barge_in", state, now, dropped, usage_of(state, now))
        self._runtime.check(state)  # cutting the timeline can bring the idle deadline forward

    def rpc(self, session_id: str, method: str) -> None:
        """A worker RPC by name; the mock worker answers only ``lk.clear_buffer`` (RES-TRN-2)."""
        if method != self._config.sessions.barge_in_rpc:
            raise Unprocessable(
                "validation.enum", f"Unknown worker RPC {method!r}.", param="method"
            )
        self.clear_buffer(session_id)

    # -- internals: creation -------------------------------------------------------------------

    def _admissible(self, caller: Caller, avatar_id: str) -> None:
        """The checks of a create after its body, in order: avatar, caps, credits, admission."""
        org_id = caller.org_id
        self._avatars.require_usable(org_id, avatar_id)
        self._caps.check(caller.key.secret, org_id, self._accounts.concurrency_limit(org_id))
        self._billing.ensure_can_start_session(org_id)
        self._scheduler.admit()

    def _open(
        self,
        caller: Caller,
        request: SessionRequest | PipecatRequest,
        *,
        transport: dict[str, Any],
        worker_token: str | None,
        metadata: dict[str, Any],
        billing_surface: str,
        embed_id: str | None,
        resets_on_silence: bool,
    ) -> SessionState:
        """Store an admitted session and queue it; each change registers its undo.

        ``request`` gives what both kinds of create ask alike (avatar, quality, timeouts; the
        maximum duration is clamped to the plan here); the rest is by keyword."""
        org_id = caller.org_id
        journal = self._journal
        asked = request.max_duration_seconds
        now = self._clock.now
        state = SessionState(  # positionally, in the order of its fields (see the class)
            self._ids.new("session"),  # id
            self._store.next_row(),  # number
            org_id,
            caller.key_id,
            caller.key.secret,
            request.avatar_id,
            request.quality,
            billing_surface,
            transport,
            worker_token,
            request.idle_timeout_seconds,
            asked
            if asked <= self._settings.never_clamped_seconds
            else self._longest(org_id, asked),
            copy.deepcopy(metadata) if metadata else {},
            embed_id,
            resets_on_silence,
            now,  # created_at
        )
        if self._moves_kept:
            state.move_times.append(now)
            state.move_codes.append(_CREATE.code)
        # Each undo is registered before its change and is safe to run whether or not the change
        # happened, so a change that fails half-way is undone too. The state's own history and
        # status go with the state; its event is held back by the journal until the unit ends.
        journal.on_undo(lambda: self._store.remove(state))
        self._store.add(state)
        self._caps.add(state.key_secret, org_id)
        # One undo for the slot and the queue entry: withdrawing a job that was never queued
        # does nothing, so it is registered before the enqueue too.
        journal.on_undo(lambda: self._unqueue(state, org_id))
        # ``_move``, ``_emit`` and (in ``commit``) ``_render`` are the named steps of a create
        # that the atomic-create tests make fail, each in turn.
        self._emit(self._move(state, "admit", now).event, state, now)
        self._scheduler.enqueue(state.id, now, state)
        return state

    def _longest(self, org_id: str, asked: int) -> int:
        """``asked`` clamped to the longest session of the organization's plan (RES-SESS-3);
        asked only when ``asked`` is longer than some plan's longest."""
        plan_key = self._accounts.organization(org_id).plan_key
        longest = self._settings.longest_session_seconds[plan_key]
        return asked if asked <= longest else longest

    def _unqueue(self, state: SessionState, org_id: str) -> None:
        """Undo of a create's cap slot and queue entry (newest first: the entry, then the slot)."""
        self._scheduler.withdraw(state.id)
        self._caps.remove(state.key_secret, org_id)

    # -- internals: transitions and their effects --------------------------------------------

    def _move(self, state: SessionState, trigger: Trigger, now: float) -> SessionTransition:
        """The one place a status changes, and only along a row of the table."""
        row = ROWS_FROM[state.status].get(trigger) or transition(state.status, trigger)
        state.status = row.target
        state.generation += 1
        state.armed_at = None
        if self._moves_kept:  # its transitions while it lives (``TransitionLog``)
            state.move_times.append(now)
            state.move_codes.append(row.code)
        if row.terminal:
            self._caps.remove(state.key_secret, state.org_id)
        return row

    def _emit(
        self,
        type_: str | None,
        state: SessionState,
        now: float,
        value: Any = None,
        seconds: int = 0,
    ) -> None:
        """Publish the session event ``type_`` about ``state`` now (``None``: the transition just
        taken names none), with its own ``value`` and the billable ``seconds`` it shows (the
        session's ``usage_of`` now, which its caller knows: none before the first heartbeat):
        the few raw values its payload is rendered from when read (``sim.sessions.events``)."""
        if type_ is not None:
            self._event_log.emit_values(
                type_,
                state.org_id,
                state.id,
                self._event_handles[type_],
                state.number,
                state.status,
                seconds,
                value,
                now,
            )

    def _worker_free_by(self, state: SessionState, moment: float) -> None:
        if state.worker_id is None:
            return
        worker = self._scheduler.find(state.worker_id)
        if worker is not None and worker.session_id == state.id:
            worker.free_by = moment

    def _place(self, state: SessionState, worker: Worker) -> None:
        now = self._clock.now
        row = self._move(state, "place", now)
        state.started_at = now
        state.worker_id = worker.id
        self._emit(row.event, state, now, worker.id)
        self._runtime.boot(state, now)

    def _expire(self, state: SessionState) -> None:
        self._finish(state, "startup_timeout", self._clock.now)

    def _fire(self, state: SessionState, trigger: Trigger) -> None:
        """Apply a worker-side trigger (first frame, deadlines, drain, crash, loss)."""
        now = self._clock.now
        if trigger == "first_frame":
            row = self._move(state, "first_frame", now)
            state.first_frame_at = now
            # ``AudioTrack.start``, positionally: the idle timer counts from the first frame.
            state.audio = AudioTrack(state.resets_on_silence, now, now, now, now)
            settings = self._settings
            state.heartbeats = HeartbeatTrack(now, settings.heartbeat_interval_seconds)
            self._worker_free_by(
                state, now + state.max_duration_seconds + settings.drain_max_seconds
            )
            self._emit(row.event, state, now)
            self._runtime.check(state)
            return
        if trigger == "heartbeat_lost" and state.worker_id is not None:
            # A worker the platform declared lost is recycled like a crashed one.
            self._scheduler.crash(state.worker_id, self._config.scheduler.worker_restart_seconds)
        self._finish(state, trigger, now)

    def _finish(self, state: SessionState, trigger: Trigger, now: float) -> None:
        """Move to a terminal status and apply the end-of-session effects exactly once."""
        row = self._move(state, trigger, now)
        state.ended_at = now
        first_frame = state.first_frame_at
        seconds = 0 if first_frame is None else billable_seconds(first_frame, now)
        state.final_billable_seconds = seconds  # what ``final_usage_seconds`` answers now
        state.end_reason, state.error_code = row.end_reason, row.error_code
        if state.worker_id is not None:
            self._scheduler.release(state.worker_id, state.id)
        self._emit(row.event, state, now, row.end_reason or row.error_code, seconds)
        if first_frame is not None and not state.charged:
            self._charge(state, now)
        state.audio = state.heartbeats = None
        self._history.close(state)
        self._store.archive(state)

    def _charge(self, state: SessionState, now: float) -> None:
        state.charged = True
        seconds = state.final_billable_seconds  # set by ``_finish``: ``usage_of`` from now on
        assert seconds is not None
        self._emit("session.usage", state, now, None, seconds)
        self._billing.charge_session(
            tuples.new(
                SessionUsage,
                (
                    state.id,
                    state.org_id,
                    state.quality,
                    state.billing_surface,
                    seconds,
                    seconds * self._fps,
                    now,
                    state.avatar_id,
                    state.embed_id,
                ),
            )
        )
