"""Realtime sessions: validation, admission, the mock worker pool and the state machine.

There is no media. A mock worker pool of ``workers`` slots stands in for the runtime: a queued
session becomes placeable after a short placement delay, holds a worker from placement until it
is terminal, emits ``session.starting`` one second after placement and its first frame one
second later, and then runs until ``end`` drains it, no inbound audio idles it out, or it runs
past its maximum duration. A session not placed within the 15 s startup timeout fails with
``no_capacity``. All of this runs on the :class:`.timeline.Timeline`, so a session's status is
right whenever it is read.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

from .auth import Principal
from .errors import ApiError, bad_request, foreign, invalid, not_found
from .limits import cap_room
from .store import Avatar, Charge, Session
from .validation import enum_field, int_field, refuse_unknown, str_field

if TYPE_CHECKING:
    from .service import Service

STATES = ("created", "queued", "starting", "running", "ending", "ended", "failed", "canceled")
QUALITIES = ("mock", "lite", "standard", "pro")
QUALITY_CREDITS_PER_SECOND = {"mock": 1, "lite": 2, "standard": 3, "pro": 5}
SURFACES = (
    "api",
    "playground",
    "embed",
    "share",
    "public_demo",
    "pipecat",
    "agora",
    "video_generation",
)
PLACEMENT_DELAY = 1.0
BOOT_DELAY = 1.0
FIRST_FRAME_DELAY = 1.0
STARTUP_TIMEOUT = 15.0
DRAIN_SECONDS = 2.0
HEARTBEAT_SECONDS = 5.0
FRAMES_PER_SECOND = 25
DEBUG_RECORD_KEY = "_avatar.debug_record"


class Sessions:
    def __init__(self, service: Service, workers: int) -> None:
        self.svc = service
        self.workers = workers
        self.held: set[str] = set()

    # -- request parsing ----------------------------------------------------------------------

    def parse_create(self, body: dict[str, Any], principal: Principal) -> dict[str, Any]:
        """Validate a ``POST /v1/sessions`` body into creation parameters."""
        reading, faults = self.svc.reading, self.svc.faults
        refuse_unknown(
            body,
            {
                "avatar_id",
                "transport",
                "idle_timeout_seconds",
                "max_duration_seconds",
                "metadata",
                "quality",
            },
            reading,
        )
        avatar_id = str_field(body, "avatar_id", reading, required=True, max_len=64)
        transport, token, observes_audio = self._parse_transport(body.get("transport"))
        idle_hi = 599 if faults.on("idle_timeout_600_refused") else 600
        idle_default = 60 if faults.on("idle_timeout_default_60") else 30
        idle = int_field(body, "idle_timeout_seconds", 1, idle_hi, idle_default, reading)
        max_hi = 3601 if faults.on("max_duration_ceiling_off_by_one") else 3600
        requested_max = int_field(body, "max_duration_seconds", 1, max_hi, 600, reading)
        metadata = self._parse_metadata(body.get("metadata"))
        quality = enum_field(body, "quality", QUALITIES, reading.default_quality, reading)
        return {
            "avatar_id": avatar_id,
            "transport": transport,
            "worker_token": token,
            "observes_audio": observes_audio,
            "idle": idle,
            "max": self.effective_max(requested_max, principal),
            "metadata": metadata,
            "quality": quality,
        }

    def effective_max(self, requested: int, principal: Principal) -> int:
        if self.svc.faults.on("max_duration_not_clamped"):
            return requested
        return min(requested, self.svc.reading.plan_max_duration[principal.org.plan_key])

    def _parse_transport(self, raw: Any) -> tuple[dict[str, Any], str | None, bool]:
        reading, faults = self.svc.reading, self.svc.faults

        def path(leaf: str) -> str:
            return leaf if faults.on("validation_param_not_dotpath") else f"transport.{leaf}"

        if raw is None:
            raise invalid(reading, "parameter.missing", "transport is required.", "transport")
        if not isinstance(raw, dict):
            raise invalid(
                reading, "parameter.invalid_type", "transport must be an object.", "transport"
            )
        ttype = raw.get("type")
        if ttype is None:
            raise invalid(reading, "parameter.missing", "transport.type is required.", path("type"))
        if not isinstance(ttype, str):
            raise invalid(
                reading, "parameter.invalid_type", "transport.type must be a string.", path("type")
            )
        if ttype == "websocket" and faults.on("websocket_transport_accepted"):
            return {"type": "websocket"}, None, False
        if ttype != "livekit":
            param = None if faults.on("transport_unsupported_param_missing") else "transport.type"
            raise bad_request(
                "transport.unsupported",
                f"Transport {ttype!r} is not available; use livekit.",
                param,
            )
        url = str_field(raw, "url", reading, required=True, max_len=2048, param=path("url"))
        schemes = ("wss://", "ws://") if faults.on("transport_ws_url_accepted") else ("wss://",)
        if not url.startswith(schemes) or len(url.split("://", 1)[1].strip("/")) == 0:
            raise invalid(
                reading,
                "transport.invalid_url",
                "transport.url must be a wss:// address.",
                path("url"),
            )
        room = str_field(
            raw, "room_name", reading, required=True, max_len=255, param=path("room_name")
        )
        token = str_field(
            raw,
            "worker_token",
            reading,
            required=reading.worker_token_required,
            max_len=8192,
            param=path("worker_token"),
        )
        values = reading.audio_source_values
        source = enum_field(
            raw, "audio_source", values, values[0], reading, param=path("audio_source")
        )
        public = {"type": "livekit", "url": url, "room_name": room, "audio_source": source}
        return public, token, True

    def _parse_metadata(self, raw: Any) -> dict[str, Any]:
        reading, faults = self.svc.reading, self.svc.faults
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise invalid(
                reading, "parameter.invalid_type", "metadata must be an object.", "metadata"
            )
        for key, value in raw.items():
            if not key.startswith("_avatar."):
                continue
            allowed = key == DEBUG_RECORD_KEY or (
                faults.on("reserved_key_prefix_match") and key.startswith(DEBUG_RECORD_KEY)
            )
            if not allowed:
                param = (
                    "metadata" if reading.reserved_key_param == "metadata" else f"metadata.{key}"
                )
                raise bad_request(
                    "metadata.reserved_key", f"{key!r} is a reserved metadata key.", param
                )
            if (
                key == DEBUG_RECORD_KEY
                and not isinstance(value, bool)
                and not faults.on("debug_record_non_boolean_accepted")
            ):
                raise invalid(
                    reading,
                    "metadata.invalid_value",
                    f"{DEBUG_RECORD_KEY} must be a boolean.",
                    f"metadata.{DEBUG_RECORD_KEY}",
                )
        size = len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode())
        if faults.on("metadata_limit_off_by_one"):
            size -= 2
        if size > reading.metadata_limit_bytes:
            raise invalid(
                reading,
                "metadata.too_large",
                f"metadata is at most {reading.metadata_limit_bytes} bytes.",
                "metadata",
            )
        return raw

    # -- admission ----------------------------------------------------------------------------

    def usable_avatar(self, avatar_id: str, principal: Principal) -> Avatar:
        reading, faults = self.svc.reading, self.svc.faults
        avatar = self.svc.store.avatars.get(avatar_id)
        mine = avatar is not None and (
            avatar.org_id in (None, principal.org.id) or faults.on("session_accepts_foreign_avatar")
        )
        if not mine:
            if reading.body_ref_status == 422:
                raise invalid(
                    reading, "avatar.not_found", "No usable avatar has that id.", "avatar_id"
                )
            if avatar is None:
                raise ApiError(404, "avatar.not_found", "No avatar has that id.", param="avatar_id")
            error = foreign(reading, "avatar", avatar_id)
            error.param = "avatar_id"
            raise error
        assert avatar is not None
        if avatar.status != "ready":
            raise ApiError(
                reading.avatar_not_ready_status,
                "avatar.not_ready",
                f"The avatar is {avatar.status}, not ready.",
                param="avatar_id",
            )
        return avatar

    def admit(self, principal: Principal) -> None:
        """Concurrency caps, then the worker pool."""
        reading, faults = self.svc.reading, self.svc.faults
        room = cap_room(
            self.svc.store.sessions.values(),
            principal.key.id,
            principal.org.id,
            principal.org.session_cap,
            reading,
            faults,
        )
        if not room:
            headers = {}
            if not faults.on("concurrency_429_missing_retry_after"):
                headers["Retry-After"] = str(reading.retry_after_concurrency)
            raise ApiError(
                429,
                "concurrent_sessions",
                "The concurrent session limit for this key or organization is reached.",
                type="rate_limit"
                if faults.on("concurrency_refusal_typed_rate_limit")
                else "quota_exceeded",
                headers=headers,
            )
        if len(self.held) >= self.workers:
            headers = {}
            if not faults.on("at_capacity_without_retry_after"):
                headers["Retry-After"] = str(reading.retry_after_capacity)
            raise ApiError(
                503,
                "at_capacity",
                "No worker is free right now.",
                type="service_unavailable",
                headers=headers,
            )

    # -- lifecycle ----------------------------------------------------------------------------

    def create(
        self,
        principal: Principal,
        params: dict[str, Any],
        t: float,
        *,
        surface: str,
        pipecat: bool = False,
    ) -> Session:
        faults, reading, tl = self.svc.faults, self.svc.reading, self.svc.timeline
        prefix = "pcs" if pipecat and faults.on("pipecat_session_id_prefix") else "sess"
        session = Session(
            id=self.svc.store.new_id(prefix, t),
            org_id=principal.org.id,
            key_id=principal.key.id,
            avatar_id=params["avatar_id"],
            status="created" if pipecat and reading.pipecat_shows_created else "queued",
            quality=params["quality"],
            billing_surface=surface,
            transport=params["transport"],
            idle_timeout_seconds=params["idle"],
            max_duration_seconds=params["max"],
            metadata=params["metadata"],
            created_at=t,
            observes_audio=params["observes_audio"],
        )
        if faults.on("started_at_set_at_create"):
            session.started_at = t
        self.svc.store.sessions[session.id] = session
        session.timers.append(
            tl.schedule(t + PLACEMENT_DELAY, lambda at: self._eligible(session, at))
        )
        if not faults.on("startup_timeout_ignored"):
            session.timers.append(
                tl.schedule(t + STARTUP_TIMEOUT, lambda at: self._startup_deadline(session, at))
            )
        return session

    def _eligible(self, s: Session, t: float) -> None:
        if s.terminal:
            return
        if s.status == "created":
            s.status = "queued"
        s.eligible = True
        self.try_place(t)

    def try_place(self, t: float) -> None:
        reading, faults, store = self.svc.reading, self.svc.faults, self.svc.store
        waiting = [
            s
            for s in store.sessions.values()
            if s.status == "queued" and s.eligible and not s.placed
        ]
        waiting.sort(key=lambda s: (s.created_at, store.order_of(s.id)))
        for s in waiting:
            if len(self.held) >= self.workers:
                return
            if not reading.caps_count_queued:
                org = store.orgs[s.org_id]
                if not cap_room(
                    store.sessions.values(), s.key_id, s.org_id, org.session_cap, reading, faults
                ):
                    continue
            self.held.add(s.id)
            s.placed_at = t
            s.timers.append(
                self.svc.timeline.schedule(t + BOOT_DELAY, lambda at, s=s: self._starting(s, at))
            )

    def _starting(self, s: Session, t: float) -> None:
        if s.status != "queued":
            return
        s.status = "starting"
        s.started_at = t if s.started_at is None else s.started_at
        s.timers.append(
            self.svc.timeline.schedule(t + FIRST_FRAME_DELAY, lambda at: self._first_frame(s, at))
        )

    def _first_frame(self, s: Session, t: float) -> None:
        if s.status != "starting":
            return
        reading, faults = self.svc.reading, self.svc.faults
        s.status = "running"
        s.first_frame_at = t
        base = t if reading.max_duration_from == "first_frame" else (s.started_at or t)
        deadlines = [(base + s.max_duration_seconds, "max_duration")]
        if s.observes_audio and not faults.on("idle_timeout_not_enforced"):
            deadlines.append((t + s.idle_timeout_seconds, "idle_timeout"))
        soonest = min(at for at, _ in deadlines)
        reasons = [reason for at, reason in deadlines if at == soonest]
        reason = reading.idle_max_tie if len(reasons) > 1 else reasons[0]
        s.timers.append(
            self.svc.timeline.schedule(soonest, lambda at: self._deadline(s, at, reason))
        )

    def _deadline(self, s: Session, t: float, reason: str) -> None:
        if s.status != "running":
            return
        if reason == "max_duration" and self.svc.faults.on("max_duration_ends_failed"):
            s.error = {"code": "max_duration_exceeded", "message": "The session ran too long."}
            self._finish(s, t, reason, status="failed")
        else:
            self._finish(s, t, reason)

    def _startup_deadline(self, s: Session, t: float) -> None:
        if s.placed or s.terminal:
            return
        code = "startup_timeout" if self.svc.faults.on("no_capacity_code_wrong") else "no_capacity"
        s.error = {"code": code, "message": "No worker could take the session in time."}
        self._finish(s, t, "startup_timeout", status="failed")

    def end(self, s: Session, t: float) -> int:
        """``POST /v1/sessions/{id}/end``; returns the HTTP status to answer with."""
        reading, faults = self.svc.reading, self.svc.faults
        if s.terminal:
            if faults.on("end_terminal_conflict"):
                raise ApiError(409, "session.terminal", f"The session is already {s.status}.")
            return 200
        if s.status == "ending":
            return 200
        if s.status in ("created", "queued") or (
            s.status == "starting" and reading.end_booting == "cancel"
        ):
            status = "ended" if faults.on("end_queued_session_ends") else "canceled"
            self._finish(s, t, "canceled", status=status)
            return 200
        if s.status == "running" and faults.on("end_running_skips_ending"):
            self._finish(s, t, "client_request")
            return 200
        # running, or booting under the "drain" reading
        self._cancel_timers(s)
        s.status = "ending"
        s.running_until = t
        s.end_reason = "client_request"
        s.timers.append(
            self.svc.timeline.schedule(t + DRAIN_SECONDS, lambda at: self._drained(s, at))
        )
        self.try_place(t)  # a draining session may no longer count toward its caps
        return reading.end_transition_status

    def _drained(self, s: Session, t: float) -> None:
        if s.status == "ending":
            self._finish(s, t, s.end_reason or "client_request")

    def _cancel_timers(self, s: Session) -> None:
        for timer in s.timers:
            timer.cancel()
        s.timers.clear()

    def _finish(self, s: Session, t: float, reason: str, *, status: str = "ended") -> None:
        self._cancel_timers(s)
        if s.running_until is None:
            s.running_until = t
        s.status = status
        s.ended_at = t
        s.end_reason = reason
        s.billable_seconds = self._billable(s, final=True)
        self._charge(s, t)
        self.held.discard(s.id)
        self.try_place(t)

    # -- usage and billing --------------------------------------------------------------------

    def _billable(self, s: Session, *, final: bool, t: float | None = None) -> int:
        if s.first_frame_at is None:
            return 0
        if s.running_until is not None:
            seconds = max(0.0, s.running_until - s.first_frame_at)
            seconds = round(seconds, 6)
            if self.svc.reading.billable_rounding == "ceil":
                return math.ceil(seconds)
            return math.floor(seconds)
        if final or t is None:
            return 0
        # still running: the usage block lags the latest heartbeat
        beats = math.floor(round(t - s.first_frame_at, 6) / HEARTBEAT_SECONDS)
        return int(beats * HEARTBEAT_SECONDS)

    def _charge(self, s: Session, t: float) -> None:
        seconds = s.billable_seconds or 0
        if seconds <= 0:
            return
        credits = seconds * QUALITY_CREDITS_PER_SECOND[s.quality]
        store = self.svc.store
        store.charges.append(
            Charge(
                id=store.new_id("chg", t),
                org_id=s.org_id,
                at=t,
                credits=credits,
                surface=s.billing_surface,
                session_id=s.id,
                quality=s.quality,
                billable_seconds=seconds,
                speech_mode="customer_managed",
            )
        )

    # -- rendering ----------------------------------------------------------------------------

    def render(
        self, s: Session, t: float, *, in_list: bool = False, worker_token: str | None = None
    ) -> dict[str, Any]:
        reading, faults, clock = self.svc.reading, self.svc.faults, self.svc.clock
        billable = s.billable_seconds if s.terminal else self._billable(s, final=False, t=t)
        billable = billable or 0
        transport = dict(s.transport)
        if worker_token is not None and faults.on("worker_token_echoed"):
            transport["worker_token"] = worker_token
        first_frame_at = None if faults.on("first_frame_at_never_set") else s.first_frame_at
        started_at: str | None = None
        if s.started_at is not None:
            started_at = clock.iso(s.started_at)
            if faults.on("started_at_naive_timestamp"):
                started_at = clock.at(s.started_at).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
        body: dict[str, Any] = {
            "id": s.id,
            "object": "session",
            "avatar_id": s.avatar_id,
            "status": s.status,
            "quality": s.quality,
            "billing_surface": s.billing_surface,
            "transport": transport,
            "idle_timeout_seconds": s.idle_timeout_seconds,
            "max_duration_seconds": s.max_duration_seconds,
            "metadata": {} if in_list and faults.on("session_list_drops_metadata") else s.metadata,
            "created_at": clock.iso(s.created_at),
            "started_at": started_at,
            "first_frame_at": clock.iso(first_frame_at) if first_frame_at is not None else None,
            "usage": {
                "billable_seconds": float(billable)
                if faults.on("session_billable_seconds_float")
                else billable,
                "frames": billable * FRAMES_PER_SECOND,
            },
            "error": s.error,
            "ended_at": clock.iso(s.ended_at) if s.ended_at is not None else None,
        }
        if reading.end_reason_field:
            body["end_reason"] = s.end_reason
        if reading.unset_fields == "omit":
            for name in ("started_at", "first_frame_at", "error", "ended_at"):
                if body[name] is None:
                    del body[name]
        return body

    # -- lookup -------------------------------------------------------------------------------

    def get(self, session_id: str, principal: Principal) -> Session:
        s = self.svc.store.sessions.get(session_id)
        if s is None:
            raise not_found("session", session_id)
        if s.org_id != principal.org.id:
            raise foreign(self.svc.reading, "session", session_id)
        return s
