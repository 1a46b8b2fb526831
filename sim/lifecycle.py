"""The session state machine as data (SES-ST-1 … SES-ST-9, GAP-SES-1).

How a session moves: a create admits it into ``queued`` (it is never seen in ``created``); a
worker takes it into ``starting``; its first frame makes it ``running``; an end while running
makes it ``ending`` and the drain that follows ``ended``. Before its first frame an end cancels
it (``canceled``); in the queue past the start-up timeout it fails (``no_capacity``); while it
runs, its maximum duration or idle timeout ends it, and a crashed or lost worker fails it
(``worker_lost``), or ends it if the customer had already asked to end.

The table below is the single source of truth for those moves: ``SessionService._move`` (in
``sim.sessions.service``) is the one place a status changes, and it takes the row for the
session's status and the trigger from ``ROWS_FROM``, or from ``transition``, which raises for a
move the table does not list. The tests read the same table to check every transition they
observe, so a property test can prove that no code path invents a transition.

Each row is ``(from, trigger) -> to`` plus what taking it means: the event the service publishes
and, for rows into a terminal status, the ``session.ended`` reason or the ``error.code`` (as the
run table does). ``None`` as ``from`` is "no session yet". ``end`` on a terminal session is not a
transition (the session is returned unchanged), so it has no row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

from sim.transitions import row_of

__all__ = [
    "ACTIVE",
    "FAILURE_MESSAGES",
    "NOT_STARTED",
    "ROWS",
    "ROWS_FROM",
    "SESSION_TRANSITIONS",
    "STATUSES",
    "TERMINAL",
    "TRANSITIONS",
    "TRIGGERS",
    "SessionStatus",
    "SessionTransition",
    "Trigger",
    "allows",
    "is_terminal",
    "move_code",
    "next_status",
    "transition",
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

_STATUS_INDEX = {status: index for index, status in enumerate(STATUSES)}
_TRIGGER_INDEX = {trigger: index for index, trigger in enumerate(TRIGGERS)}


def move_code(trigger: Trigger, target: SessionStatus) -> int:
    """A move (trigger and target status) packed in one small integer, as session histories
    store it: ``divmod(code, len(STATUSES))`` gives back the two positions."""
    return _TRIGGER_INDEX[trigger] * len(STATUSES) + _STATUS_INDEX[target]


@dataclass(frozen=True, slots=True)
class SessionTransition:
    """One row of the table: the move, the event it publishes and how the session ends.

    ``end_reason`` is set on rows into ``ended`` (the ``session.ended`` reason), ``error_code``
    on rows into ``failed`` (the session's ``error.code``), so the service reads a session's
    outcome from the row it took instead of deciding it again in code.
    """

    source: SessionStatus | None  # None: the session does not exist yet
    trigger: Trigger
    target: SessionStatus
    event: str | None  # the event the service emits when it takes the row
    end_reason: str | None = None
    error_code: str | None = None
    #: Derived once, read on every move: the move as a session's history stores it
    #: (``move_code``), and whether the row ends the session.
    code: int = field(init=False, repr=False, compare=False)
    terminal: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", move_code(self.trigger, self.target))
        object.__setattr__(self, "terminal", self.target in TERMINAL)


_NO_CAPACITY, _WORKER_LOST, _CLIENT = "no_capacity", "worker_lost", "client_request"

SESSION_TRANSITIONS: Final[tuple[SessionTransition, ...]] = (
    SessionTransition(None, "create", "created", None),
    SessionTransition("created", "admit", "queued", "session.queued"),
    SessionTransition("queued", "place", "starting", "session.starting"),
    SessionTransition("queued", "startup_timeout", "failed", "session.failed",
                      error_code=_NO_CAPACITY),
    SessionTransition("queued", "end", "canceled", "session.canceled"),
    SessionTransition("starting", "end", "canceled", "session.canceled"),
    SessionTransition("starting", "first_frame", "running", "session.first_frame"),
    SessionTransition("starting", "worker_crash", "failed", "session.failed",
                      error_code=_WORKER_LOST),
    SessionTransition("running", "end", "ending", "session.ending"),
    SessionTransition("running", "max_duration", "ended", "session.ended",
                      end_reason="max_duration"),
    SessionTransition("running", "idle_timeout", "ended", "session.ended",
                      end_reason="idle_timeout"),
    SessionTransition("running", "worker_crash", "failed", "session.failed",
                      error_code=_WORKER_LOST),
    SessionTransition("running", "heartbeat_lost", "failed", "session.failed",
                      error_code=_WORKER_LOST),
    SessionTransition("ending", "drain_complete", "ended", "session.ended", end_reason=_CLIENT),
    # The customer had already asked to end: a crash or a lost worker while draining ends it.
    SessionTransition("ending", "worker_crash", "ended", "session.ended", end_reason=_CLIENT),
    SessionTransition("ending", "heartbeat_lost", "ended", "session.ended", end_reason=_CLIENT),
)  # fmt: skip

#: ``error.message`` of a failed session, by its code.
FAILURE_MESSAGES: Final[Mapping[str, str]] = MappingProxyType({
    _NO_CAPACITY: "No worker could take the session within the start-up timeout.",
    _WORKER_LOST: "The worker hosting the session stopped responding.",
})  # fmt: skip

#: The rows by ``(from, trigger)``.
ROWS: Final[Mapping[tuple[SessionStatus | None, Trigger], SessionTransition]] = {
    (row.source, row.trigger): row for row in SESSION_TRANSITIONS
}

#: The same rows by status, then trigger (every status and ``None`` present, terminal ones with
#: none): what the service reads on every move.
ROWS_FROM: Final[Mapping[SessionStatus | None, Mapping[Trigger, SessionTransition]]] = {
    source: {row.trigger: row for row in SESSION_TRANSITIONS if row.source == source}
    for source in (None, *STATUSES)
}

#: The table as ``(from, trigger) -> to`` (what the tests and property checks read).
TRANSITIONS: Final[Mapping[tuple[SessionStatus | None, Trigger], SessionStatus]] = MappingProxyType(
    {key: row.target for key, row in ROWS.items()}
)


def is_terminal(status: SessionStatus) -> bool:
    return status in TERMINAL


def allows(current: SessionStatus | None, trigger: Trigger) -> bool:
    """Whether the table has a row for ``trigger`` from ``current``."""
    return (current, trigger) in TRANSITIONS


def transition(current: SessionStatus | None, trigger: Trigger) -> SessionTransition:
    """The row ``trigger`` takes from ``current``; an unlisted move is a bug.

    Raises ``InternalError`` (never expected in a correct simulator) so that an illegal move
    surfaces loudly in tests instead of silently corrupting a session.
    """
    return row_of(ROWS, current, trigger, "session")


def next_status(current: SessionStatus | None, trigger: Trigger) -> SessionStatus:
    """The status ``trigger`` leads to from ``current`` (see ``transition``)."""
    return transition(current, trigger).target
