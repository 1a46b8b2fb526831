"""Run and run-deletion lifecycles as data (GAP-RUN-1, GAP-RUN-7).

The service moves a run only through ``RUN_TRANSITIONS`` and a deletion only through
``DELETION_TRANSITIONS``; tests read the same tables, so the documented machine and the executed
one cannot drift apart. Each row names the event the transition appends to the run's event log.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sim.transitions import row_of

__all__ = [
    "DELETION_TERMINAL",
    "DELETION_TRANSITIONS",
    "RUN_TERMINAL",
    "RUN_TRANSITIONS",
    "DeletionStatus",
    "DeletionTransition",
    "RunStatus",
    "RunTransition",
    "next_deletion_status",
    "next_run_status",
]


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"


class DeletionStatus(StrEnum):
    PENDING = "pending"
    PURGING = "purging"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RunTransition:
    source: RunStatus | None  # None: the run does not exist yet
    trigger: str
    target: RunStatus
    event: str


@dataclass(frozen=True, slots=True)
class DeletionTransition:
    source: DeletionStatus | None
    trigger: str
    target: DeletionStatus


RUN_TRANSITIONS: tuple[RunTransition, ...] = (
    RunTransition(None, "create", RunStatus.QUEUED, "run.queued"),
    RunTransition(RunStatus.QUEUED, "start", RunStatus.RUNNING, "run.started"),
    RunTransition(RunStatus.QUEUED, "capacity_timeout", RunStatus.FAILED, "run.failed"),
    RunTransition(RunStatus.QUEUED, "cancel", RunStatus.CANCELED, "run.canceled"),
    RunTransition(RunStatus.RUNNING, "cancel", RunStatus.CANCELED, "run.canceled"),
    RunTransition(RunStatus.RUNNING, "complete", RunStatus.SUCCEEDED, "run.succeeded"),
    RunTransition(RunStatus.RUNNING, "model_error", RunStatus.FAILED, "run.failed"),
)

#: Nothing moves a run out of these (cancel answers ``run.not_cancelable``).
RUN_TERMINAL: frozenset[RunStatus] = frozenset(
    {RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELED}
)

DELETION_TRANSITIONS: tuple[DeletionTransition, ...] = (
    DeletionTransition(None, "request", DeletionStatus.PENDING),
    DeletionTransition(DeletionStatus.PENDING, "begin_purge", DeletionStatus.PURGING),
    DeletionTransition(DeletionStatus.PURGING, "purged", DeletionStatus.COMPLETED),
    DeletionTransition(DeletionStatus.PURGING, "storage_failure", DeletionStatus.FAILED),
)

DELETION_TERMINAL: frozenset[DeletionStatus] = frozenset(
    {DeletionStatus.COMPLETED, DeletionStatus.FAILED}
)

_RUN_INDEX = {(t.source, t.trigger): t for t in RUN_TRANSITIONS}
_DELETION_INDEX = {(t.source, t.trigger): t for t in DELETION_TRANSITIONS}


def next_run_status(source: RunStatus | None, trigger: str) -> RunTransition:
    """The declared row for ``trigger`` in ``source``; an undeclared move is a bug, not a 4xx."""
    return row_of(_RUN_INDEX, source, trigger, "run")


def next_deletion_status(source: DeletionStatus | None, trigger: str) -> DeletionTransition:
    return row_of(_DELETION_INDEX, source, trigger, "run deletion")
