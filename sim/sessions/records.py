"""The session record: mutable state owned by the service, immutable snapshots, and rendering.

``SessionState`` is the service's private, mutable view of one session. Everything outside the
service sees either the rendered contract shape (``render_session``: exactly the seed's Session
fields, JSON-ready) or a flat, frozen ``Session`` snapshot for collectors (principle 6: results
are immutable records; nobody reaches into live objects). The customer's ``worker_token`` lives
only on the private state: neither the snapshot nor the rendering carries it (RES-SESS-2).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.lifecycle import TERMINAL, SessionStatus
from sim.sessions.audio import AudioTrack
from sim.sessions.heartbeat import HeartbeatTrack, billable_seconds

__all__ = ["Session", "SessionState", "Transition", "render_session"]


@dataclass(frozen=True, slots=True)
class Transition:
    """One observed move of the state machine (``from_status`` is ``None`` at creation)."""

    at: float
    from_status: SessionStatus | None
    trigger: str
    to_status: SessionStatus


@dataclass(slots=True, kw_only=True)
class SessionState:
    # What the create decided: no defaults here, so the configured values are the only ones.
    id: str
    org_id: str
    key_id: str
    key_secret: str = field(repr=False)  # for the per-key cap only; never exposed
    avatar_id: str
    quality: str
    billing_surface: str
    transport: dict[str, Any]  # rendered form, no worker_token
    worker_token: str | None = field(repr=False)
    idle_timeout_seconds: int
    max_duration_seconds: int
    metadata: dict[str, Any]
    embed_id: str | None
    resets_on_silence: bool
    created_at: float
    # What the session's life changes.
    observes_audio: bool = True
    status: SessionStatus = "created"
    started_at: float | None = None
    first_frame_at: float | None = None
    ending_at: float | None = None
    ended_at: float | None = None
    end_reason: str | None = None
    error_code: str | None = None
    error_message: str | None = None
    worker_id: str | None = None
    history: list[Transition] = field(default_factory=list)
    audio: AudioTrack | None = None
    heartbeats: HeartbeatTrack | None = None
    heartbeat_lost_at: float | None = None
    final_billable_seconds: int | None = None
    charged: bool = False
    barge_ins: int = 0
    generation: int = 0  # bumped on every transition; timers of older generations are stale
    armed_at: float | None = None  # the earliest pending deadline timer, if any

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True, slots=True)
class Session:
    """A flat, immutable snapshot of one session for collectors and scenario results."""

    id: str
    org_id: str
    key_id: str
    avatar_id: str
    status: SessionStatus
    quality: str
    billing_surface: str
    transport_type: str
    audio_source: str | None
    idle_timeout_seconds: int
    max_duration_seconds: int
    metadata: Mapping[str, Any]
    embed_id: str | None
    created_at: float
    started_at: float | None
    first_frame_at: float | None
    ending_at: float | None
    ended_at: float | None
    end_reason: str | None
    error_code: str | None
    worker_id: str | None
    billable_seconds: int
    frames: int
    charged: bool
    barge_ins: int
    published_tracks: tuple[str, ...]
    history: tuple[Transition, ...]


def usage_of(state: SessionState, now: float, frames_per_second: int) -> tuple[int, int]:
    """``(billable_seconds, frames)`` as rendered at ``now`` (GAP-SES-3).

    Terminal sessions show their final, canonical figures; live ones show the values of the
    last received heartbeat, which lag by less than one interval (more only during a loss).
    """
    if state.final_billable_seconds is not None:
        seconds = state.final_billable_seconds
    elif state.heartbeats is not None:
        seconds = state.heartbeats.usage_seconds(now)
    else:
        seconds = 0
    return seconds, seconds * frames_per_second


def final_usage_seconds(state: SessionState, until: float) -> int:
    if state.first_frame_at is None:
        return 0
    return billable_seconds(state.first_frame_at, until)


def render_session(state: SessionState, clock: Clock, frames_per_second: int) -> dict[str, Any]:
    """The contract's Session object, JSON-ready (RES-SESS-1)."""

    def ts(value: float | None) -> str | None:
        return None if value is None else clock.timestamp(value)

    seconds, frames = usage_of(state, clock.now, frames_per_second)
    error = (
        {"code": state.error_code, "message": state.error_message}
        if state.status == "failed" and state.error_code is not None
        else None
    )
    return {
        "id": state.id,
        "object": "session",
        "avatar_id": state.avatar_id,
        "status": state.status,
        "quality": state.quality,
        "billing_surface": state.billing_surface,
        "transport": dict(state.transport),
        "idle_timeout_seconds": state.idle_timeout_seconds,
        "max_duration_seconds": state.max_duration_seconds,
        "metadata": copy.deepcopy(state.metadata),
        "created_at": clock.timestamp(state.created_at),
        "started_at": ts(state.started_at),
        "first_frame_at": ts(state.first_frame_at),
        "usage": {"billable_seconds": seconds, "frames": frames},
        "error": error,
    }


def snapshot(
    state: SessionState, now: float, frames_per_second: int, tracks: tuple[str, ...]
) -> Session:
    seconds, frames = usage_of(state, now, frames_per_second)
    published = tracks if state.first_frame_at is not None and not state.terminal else ()
    return Session(
        id=state.id,
        org_id=state.org_id,
        key_id=state.key_id,
        avatar_id=state.avatar_id,
        status=state.status,
        quality=state.quality,
        billing_surface=state.billing_surface,
        transport_type=str(state.transport.get("type", "")),
        audio_source=state.transport.get("audio_source"),
        idle_timeout_seconds=state.idle_timeout_seconds,
        max_duration_seconds=state.max_duration_seconds,
        metadata=MappingProxyType(copy.deepcopy(state.metadata)),
        embed_id=state.embed_id,
        created_at=state.created_at,
        started_at=state.started_at,
        first_frame_at=state.first_frame_at,
        ending_at=state.ending_at,
        ended_at=state.ended_at,
        end_reason=state.end_reason,
        error_code=state.error_code,
        worker_id=state.worker_id,
        billable_seconds=seconds,
        frames=frames,
        charged=state.charged,
        barge_ins=state.barge_ins,
        published_tracks=published,
        history=tuple(state.history),
    )
