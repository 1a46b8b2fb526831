"""The session record: mutable state while a session lives, immutable snapshots, and its body.

``SessionState`` is the service's working view of one session. Everything outside the service
sees either its contract body (``SessionState.to_resource``: exactly the seed's Session fields,
JSON-ready) or a flat, frozen ``Session`` snapshot for collectors (principle 6: results are
immutable records; nobody reaches into live objects). The customer's ``worker_token`` lives only
on the live state: neither the snapshot, the body nor the archive carries it (RES-SESS-2).

Once a session is terminal its state is written to the store's columns and the live object is
dropped (``sim.sessions.store``); reading it back gives an equal ``SessionState``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from sim.clock import Clock
from sim.lifecycle import FAILURE_MESSAGES, TERMINAL, SessionStatus
from sim.sessions.audio import AudioTrack
from sim.sessions.heartbeat import HeartbeatTrack, billable_seconds

__all__ = [
    "NOT_PLACED",
    "NO_FRAME",
    "Session",
    "SessionState",
    "Transition",
    "final_usage_seconds",
    "usage_of",
]

#: Statuses in which ``started_at`` / ``first_frame_at`` cannot have been set yet.
NOT_PLACED: frozenset[str] = frozenset({"created", "queued"})
NO_FRAME: frozenset[str] = frozenset({"created", "queued", "starting"})


@dataclass(frozen=True, slots=True)
class Transition:
    """One observed move of the state machine (``from_status`` is ``None`` at creation)."""

    at: float
    from_status: SessionStatus | None
    trigger: str
    to_status: SessionStatus


@dataclass(slots=True)
class SessionState:
    # What the create decided: no defaults here, so the configured values are the only ones.
    # Not keyword-only: the create builds one per session positionally, in this order, on the
    # session core's fast path (make bench measures what that saves).
    id: str
    number: int  # position in creation order: the row of the store's columns
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
    status: SessionStatus = "created"
    started_at: float | None = None
    first_frame_at: float | None = None
    ending_at: float | None = None
    ended_at: float | None = None
    end_reason: str | None = None
    error_code: str | None = None
    worker_id: str | None = None
    audio: AudioTrack | None = None
    heartbeats: HeartbeatTrack | None = None
    heartbeat_lost_at: float | None = None
    final_billable_seconds: int | None = None
    charged: bool = False
    barge_ins: int = 0
    # Its transitions while it lives, as two parallel lists (moment; trigger and target packed
    # in one code, ``sim.sessions.history``): written to the columns in two extends at its end.
    move_times: list[float] = field(default_factory=list)
    move_codes: list[int] = field(default_factory=list)
    generation: int = 0  # bumped on every transition; timers of older generations are stale
    armed_at: float | None = None  # the earliest pending deadline timer, if any

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def to_resource(
        self,
        clock: Clock,
        frames_per_second: int,
        *,
        status: SessionStatus | None = None,
        usage_seconds: int | None = None,
    ) -> dict[str, Any]:
        """The contract's Session object, JSON-ready (RES-SESS-1).

        ``status`` and ``usage_seconds`` render the session as it was when it had that status
        and that usage (an event's payload): what a later transition set is left out.
        """
        shown = self.status if status is None else status
        if usage_seconds is None:
            usage_seconds = usage_of(self, clock.now)
        started = None if shown in NOT_PLACED else self.started_at
        first_frame = None if shown in NO_FRAME else self.first_frame_at
        error = (
            {"code": self.error_code, "message": FAILURE_MESSAGES[self.error_code]}
            if shown == "failed" and self.error_code is not None
            else None
        )
        return {
            "id": self.id,
            "object": "session",
            "avatar_id": self.avatar_id,
            "status": shown,
            "quality": self.quality,
            "billing_surface": self.billing_surface,
            "transport": self.transport.copy(),  # ``dict(...)``'s copy, for a method call
            "idle_timeout_seconds": self.idle_timeout_seconds,
            "max_duration_seconds": self.max_duration_seconds,
            "metadata": copy.deepcopy(self.metadata) if self.metadata else {},
            "created_at": clock.timestamp(self.created_at),
            "started_at": None if started is None else clock.timestamp(started),
            "first_frame_at": None if first_frame is None else clock.timestamp(first_frame),
            "usage": {
                "billable_seconds": usage_seconds,
                "frames": usage_seconds * frames_per_second,
            },
            "error": error,
        }


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


def usage_of(state: SessionState, now: float) -> int:
    """``usage.billable_seconds`` as shown at ``now`` (GAP-SES-3).

    Terminal sessions show their final, canonical figure; live ones the value of the last
    received heartbeat, which lags by less than one interval (more only during a loss).
    """
    if state.final_billable_seconds is not None:
        return state.final_billable_seconds
    if state.heartbeats is not None:
        return state.heartbeats.usage_seconds(now)
    return 0


def final_usage_seconds(state: SessionState, until: float) -> int:
    if state.first_frame_at is None:
        return 0
    return billable_seconds(state.first_frame_at, until)


#: The snapshot's fields that the state keeps under the same name, copied as they are; the
#: others are derived in ``snapshot`` (``metadata`` is in both, but copied deep and read-only).
_KEPT_AS_IS: tuple[str, ...] = tuple(
    name
    for name in Session.__dataclass_fields__
    if name in SessionState.__dataclass_fields__ and name != "metadata"
)


def snapshot(
    state: SessionState,
    now: float,
    frames_per_second: int,
    tracks: tuple[str, ...],
    history: tuple[Transition, ...],
) -> Session:
    """The frozen ``Session`` of ``state`` at ``now``."""
    seconds = usage_of(state, now)
    published = tracks if state.first_frame_at is not None and not state.terminal else ()
    return Session(
        **{name: getattr(state, name) for name in _KEPT_AS_IS},
        transport_type=str(state.transport.get("type", "")),
        audio_source=state.transport.get("audio_source"),
        metadata=MappingProxyType(copy.deepcopy(state.metadata)),
        billable_seconds=seconds,
        frames=seconds * frames_per_second,
        published_tracks=published,
        history=history,
    )
