"""The run and run-deletion records and their contract rendering (RES-RUN-1/3/5/6).

A ``Run`` is the service's working state of one execution; ``to_resource`` renders it exactly in
the contract's shape. Fields the seed marks optional are omitted when they carry nothing
(``deleted_at`` before a deletion, ``capacity_wait`` unless waiting, ``eta`` unless honest,
file objects until an output exists); fields it marks always-present are always there, ``null``
until they happen (GAP-RUN-2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.clock import Clock
from sim.columns import Column, Table
from sim.runs.assets import Modality
from sim.runs.eta import Eta
from sim.runs.events import RunEventLog
from sim.runs.inputs import MediaInput
from sim.runs.lifecycle import RUN_TERMINAL, DeletionStatus, RunStatus

__all__ = [
    "CAPACITY_WAIT_MESSAGE",
    "FileObject",
    "OutputItem",
    "Run",
    "RunDeletion",
    "runs_table",
]

CAPACITY_WAIT_MESSAGE = "All run capacity is busy; the run starts when a slot frees up."


@dataclass(frozen=True, slots=True)
class FileObject:
    content_type: str
    file_name: str
    file_size: int
    url: str

    def to_resource(self) -> dict[str, Any]:
        return {
            "content_type": self.content_type,
            "file_name": self.file_name,
            "file_size": self.file_size,
            "url": self.url,
        }


@dataclass(frozen=True, slots=True)
class OutputItem:
    """One typed output (GAP-RUN-4): ``text`` items carry text, ``file`` items an asset and its
    file object, ``data`` items a JSON object."""

    modality: Modality
    role: str  # primary | auxiliary
    type: str  # text | file | data
    part_id: str
    text: str | None = None
    asset_id: str | None = None
    file: FileObject | None = None
    data: dict[str, Any] | None = None

    def to_resource(self) -> dict[str, Any]:
        item: dict[str, Any] = {"modality": self.modality, "role": self.role, "type": self.type}
        if self.asset_id is not None:
            item["asset_id"] = self.asset_id
        if self.file is not None:
            item["file"] = self.file.to_resource()
        if self.text is not None:
            item["text"] = self.text
        if self.data is not None:
            item["data"] = dict(self.data)
        return item


@dataclass(slots=True)
class Run:
    id: str
    org_id: str
    model: str
    model_revision: str
    operation: str
    pricing_version: str
    internal_model: bool
    created_at: float
    events: RunEventLog = field(repr=False)
    external_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    status: RunStatus = RunStatus.QUEUED
    progress: float = 0.0
    started_at: float | None = None
    completed_at: float | None = None
    reserved: int = 0  # credits currently held for the run
    charged: int = 0
    estimated_units: float = 0.0
    error: dict[str, str] | None = None
    outputs: list[OutputItem] = field(default_factory=list)
    files: dict[str, FileObject] = field(default_factory=dict)  # audio | image | video
    deleted_at: float | None = None
    capacity_deadline: float | None = None  # set while waiting for capacity
    holds_slot: bool = False
    duration: float | None = None  # drawn when the run starts
    input: Any = field(default=None, repr=False)  # the validated input model
    media: dict[str, MediaInput] = field(default_factory=dict, repr=False)  # by param path
    owned_asset_ids: list[str] = field(default_factory=list)  # run_input + run_output
    referenced_asset_ids: list[str] = field(default_factory=list)  # inputs it did not create

    @property
    def terminal(self) -> bool:
        return self.status in RUN_TERMINAL

    @property
    def waiting_for_capacity(self) -> bool:
        return self.status is RunStatus.QUEUED and self.capacity_deadline is not None

    def _capacity_wait(self, clock: Clock) -> dict[str, Any] | None:
        if not self.waiting_for_capacity or self.capacity_deadline is None:
            return None
        return {
            "status": "waiting",
            "deadline_at": clock.timestamp(self.capacity_deadline),
            "message": CAPACITY_WAIT_MESSAGE,
        }

    def to_resource(self, clock: Clock, eta: Eta | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "run",
            "model": self.model,
            "model_revision": self.model_revision,
            "operation": self.operation,
            "status": str(self.status),
            "progress": self.progress,
            "created_at": clock.timestamp(self.created_at),
            "started_at": clock.timestamp_or_none(self.started_at),
            "completed_at": clock.timestamp_or_none(self.completed_at),
            "external_id": self.external_id,
            "metadata": dict(self.metadata),
            "credits": {
                "charged": self.charged,
                "reserved": self.reserved,
                "pricing_version": self.pricing_version,
            },
            "error": None if self.error is None else dict(self.error),
            "outputs": [item.to_resource() for item in self.outputs],
        }
        if self.deleted_at is not None:
            body["deleted_at"] = clock.timestamp(self.deleted_at)
        for kind in ("audio", "image", "video"):
            if kind in self.files:
                body[kind] = self.files[kind].to_resource()
        return self._with_waits(body, clock, eta)

    def to_status(self, clock: Clock, eta: Eta | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "run.status",
            "status": str(self.status),
            "progress": self.progress,
            "error": None if self.error is None else dict(self.error),
        }
        return self._with_waits(body, clock, eta)

    def _with_waits(self, body: dict[str, Any], clock: Clock, eta: Eta | None) -> dict[str, Any]:
        """``body`` with the run's capacity wait and its estimate, when it has them."""
        capacity_wait = self._capacity_wait(clock)
        if capacity_wait is not None:
            body["capacity_wait"] = capacity_wait
        if eta is not None:
            body["eta"] = eta.to_resource()
        return body


@dataclass(slots=True)
class RunDeletion:
    id: str
    run_id: str
    org_id: str
    requested_at: float
    status: DeletionStatus = DeletionStatus.PENDING
    started_at: float | None = None
    completed_at: float | None = None
    error: str | None = None
    retained_assets: int = 0

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "run.deletion",
            "run_id": self.run_id,
            "status": str(self.status),
            "requested_at": clock.timestamp(self.requested_at),
            "started_at": clock.timestamp_or_none(self.started_at),
            "completed_at": clock.timestamp_or_none(self.completed_at),
            "error": self.error,
        }


def runs_table(runs: Sequence[Run]) -> Table:
    """``runs`` as columns, one row each in their order: ``run_id``, ``org_id``, ``model``,
    ``operation``, ``status``, ``error_code`` (texts; ``error_code`` is ``None`` unless the run
    failed); ``credits_charged`` (int); ``created_at``, ``started_at``, ``completed_at`` (times,
    NaN until they happen)."""

    def moment(value: float | None) -> float:
        return math.nan if value is None else value

    return Table(
        len(runs),
        {
            "run_id": Column("text", [r.id for r in runs]),
            "org_id": Column("text", [r.org_id for r in runs]),
            "model": Column("text", [r.model for r in runs]),
            "operation": Column("text", [r.operation for r in runs]),
            "status": Column("text", [str(r.status.value) for r in runs]),
            "credits_charged": Column("int", [r.charged for r in runs]),
            "error_code": Column(
                "text", [None if r.error is None else r.error.get("code") for r in runs]
            ),
            "created_at": Column("time", [r.created_at for r in runs]),
            "started_at": Column("time", [moment(r.started_at) for r in runs]),
            "completed_at": Column("time", [moment(r.completed_at) for r in runs]),
        },
    )
