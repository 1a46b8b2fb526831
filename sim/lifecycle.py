"""The session state machine as data (SES-ST-1 … SES-ST-9, GAP-SES-1).

The table below is the single source of truth for how a session may move: the service moves a
session only through ``next_status``, which refuses anything the table does not list, and the
tests read the same table to check every transition they observe. Keeping the machine as data
(rather than as ``if`` chains spread over the scheduler and the worker) is what lets a property
test prove that no code path invents a transition.

Rows are ``(from, trigger) -> to``; ``None`` as ``from`` is "no session yet". ``end`` on a
terminal session is not a transition (the session is returned unchanged), so it has no row.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal

from sim.errors import InternalError

__all__ = [
    "ACTIVE",
    "NOT_STARTED",
    "STATUSES",
    "TERMINAL",
    "TRANSITIONS",
    "TRIGGERS",
    "SessionStatus",
    "Trigger",
    "allows",
    "is_terminal",
    "next_status",
]

SessionStatus = Literal[
    "created", "queued", "starting", "running", "ending", "ended", "failed", "canceled"
]

Trigger = Literal[
    "create",  # POST accepted
    "admit",  # admission control let it into the wait queue
    "place",  # a worker took the job and starts booting (session.starting)
    "startup_timeout",  # not placed within startup_timeout_seconds (no_capacity)
    "first_frame",  # the worker produced its first frame (session.first_frame)
    "end",  # the customer asked to end the session
    "drain_complete",  # the worker published its in-flight frames after an end
    "max_duration",  # running past max_duration_seconds
    "idle_timeout",  # no audio for idle_timeout_seconds
    "worker_crash",  # the worker process died
    "heartbeat_lost",  # no heartbeat for heartbeat_loss_limit_seconds
]

STATUSES: Final[tuple[SessionStatus, ...]] = (
    "created", "queued", "starting", "running", "ending", "ended", "failed", "canceled",
)  # fmt: skip

TRIGGERS: Final[tuple[Trigger, ...]] = (
    "create", "admit", "place", "startup_timeout", "first_frame", "end", "drain_complete",
    "max_duration", "idle_timeout", "worker_crash", "heartbeat_lost",
)  # fmt: skip

TERMINAL: Final[frozenset[SessionStatus]] = frozenset({"ended", "failed", "canceled"})

#: Not yet started: ``end`` cancels these (SES-ST-4).
NOT_STARTED: Final[frozenset[SessionStatus]] = frozenset({"created", "queued", "starting"})

#: Non-terminal: what the concurrency caps count (GAP-LIM-4).
ACTIVE: Final[frozenset[SessionStatus]] = frozenset(set(STATUSES) - TERMINAL)

TRANSITIONS: Final[Mapping[tuple[SessionStatus | None, Trigger], SessionStatus]] = (
    MappingProxyType({
        (None, "create"): "created",
        ("created", "admit"): "queued",
        ("queued", "place"): "starting",
        ("queued", "startup_timeout"): "failed",  # error no_capacity
        ("queued", "end"): "canceled",
        ("starting", "end"): "canceled",
        ("starting", "first_frame"): "running",
        ("starting", "worker_crash"): "failed",  # error worker_lost
        ("running", "end"): "ending",
        ("running", "max_duration"): "ended",
        ("running", "idle_timeout"): "ended",
        ("running", "worker_crash"): "failed",  # error worker_lost
        ("running", "heartbeat_lost"): "failed",  # error worker_lost
        ("ending", "drain_complete"): "ended",  # reason client_request
        ("ending", "worker_crash"): "ended",  # the customer had already asked to end
        ("ending", "heartbeat_lost"): "ended",  # same reasoning as a crash while draining
    })
)  # fmt: skip


def is_terminal(status: SessionStatus) -> bool:
    return status in TERMINAL


def allows(current: SessionStatus | None, trigger: Trigger) -> bool:
    """Whether the table has a row for ``trigger`` from ``current``."""
    return (current, trigger) in TRANSITIONS


def next_status(current: SessionStatus | None, trigger: Trigger) -> SessionStatus:
    """The status ``trigger`` leads to from ``current``; an unlisted move is a bug.

    Raises ``InternalError`` (never expected in a correct simulator) so that an illegal move
    surfaces loudly in tests instead of silently corrupting a session.
    """
    try:
        return TRANSITIONS[(current, trigger)]
    except KeyError:
        raise InternalError(
            "internal_error", f"Illegal session transition: {current!r} on {trigger!r}."
        ) from None
