"""The run endpoints' domain side: create, read, cancel, delete (EP-RUN-1..4, EP-MODEL-1).

``RunService`` owns the runs of every organization. Creating a run validates the body against the
model's ``request_schemas``, bounds the organization's queue (GAP-RUN-8), reserves credits,
stores inline inputs as ``run_input`` assets and hands the run to the slot pool. Execution is a
SimPy process with a constant number of steps per run (start, ``progress_updates`` progress
points, finish), whatever its duration. Every status change goes through the declared table in
``sim.runs.lifecycle`` and appends a run event; lifecycle events are also published on the
kernel's event log for webhooks (GAP-EV-1).

Rate limits and idempotency wrap this service in the platform's composition root; they are not
repeated here.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import simpy

from sim.accounts import AccountRegistry, Caller
from sim.columns import Table
from sim.config import ModelConfig
from sim.errors import Conflict, NotFound, PermissionDenied, RateLimited
from sim.journal import Prepared, committed, discard
from sim.kernel import Kernel
from sim.pagination import paginate, validate_limit
from sim.ports import BillingPort, RunCharge
from sim.rng import sample
from sim.runs.assets import AssetService, Modality
from sim.runs.capacity import RunSlots
from sim.runs.catalog import CATALOG, ModelSpec, PortraitVideoInput, find_model
from sim.runs.content import StoredBytes
from sim.runs.deletion import PurgeQueue
from sim.runs.eta import Eta, remaining_time
from sim.runs.events import LIFECYCLE_PART, RunEventLog
from sim.runs.execution import credits_for, estimate_units, produce
from sim.runs.inputs import MediaInput, RunRequest, parse_body, resolve_media
from sim.runs.lifecycle import DeletionStatus, RunStatus, next_deletion_status, next_run_status
from sim.runs.records import CAPACITY_WAIT_MESSAGE, Run, RunDeletion, runs_table

__all__ = ["RunService"]

#: Run events that are not also published on the kernel's event log (high-volume parts).
_RUN_LOG_ONLY = frozenset({"run.progress", "run.output"})
#: The data of every run's first event, one shared payload (a run's log owns what it is given).
_QUEUED: Mapping[str, Any] = MappingProxyType({"status": "queued"})


class RunService:
    def __init__(
        self,
        kernel: Kernel,
        accounts: AccountRegistry,
        billing: BillingPort,
        assets: AssetService,
    ) -> None:
        self._kernel = kernel
        self._accounts = accounts
        self._billing = billing
        self._assets = assets
        self._runs: dict[str, Run] = {}
        self._by_org: dict[str, list[Run]] = {}  # oldest first
        self._queued: dict[str, dict[str, Run]] = {}  # org -> runs in ``queued``
        self._deletions: list[RunDeletion] = []
        self._last_deletion: dict[str, RunDeletion] = {}  # run id -> latest deletion
        runs = kernel.config.runs
        self._slots = RunSlots(
            kernel.clock,
            slots=runs.run_workers,
            wait_seconds=runs.capacity_wait_seconds,
            on_dispatch=self._dispatch,
            on_expire=self._expire,
            defer=kernel.journal.defer,
        )
        self._purges = PurgeQueue(kernel, self._purge)
        # Each progress point's data, shared by every run: ``progress_updates`` of them.
        steps = runs.progress_updates + 1
        self._progress: list[Mapping[str, Any]] = [
            MappingProxyType({"progress": round(step / steps, 6)}) for step in range(1, steps)
        ]

    # -- records for collectors and faults -----------------------------------------------------

    def runs(self) -> list[Run]:
        return list(self._runs.values())

    def export(self) -> Table:
        """Every run in creation order, as it is now (``runs_table``)."""
        return runs_table(list(self._runs.values()))

    def release(self) -> None:
        """Forget every run and deletion: who read them in bulk (a run's collector, which hands
        the platform over) returns their memory."""
        self._runs, self._by_org, self._queued = {}, {}, {}
        self._deletions, self._last_deletion = [], {}

    def deletions(self) -> list[RunDeletion]:
        return list(self._deletions)

    def fail_next_purge(self, org_id: str | None = None) -> None:
        """Fault injection (SIM-9): the next purge (of ``org_id``, or any) fails."""
        self._purges.fail_next(org_id)

    def set_purge_failure(self, enabled: bool) -> None:
        """Fault injection (SIM-9): every purge fails while enabled."""
        self._purges.set_failure(enabled)

    @property
    def purge_failure(self) -> bool:
        """Whether ``set_purge_failure`` is on."""
        return self._purges.failing

    # -- models ----------------------------------------------------------------------------------

    def list_models(self, caller: Caller) -> dict[str, Any]:
        """Any valid key may list models: it is the key test (EP-MODEL-1, GAP-AUTH-1)."""
        del caller
        return {
            "object": "list",
            "data": [spec.to_resource(self._model_config(spec.id)) for spec in CATALOG],
        }

    def _model_config(self, model_id: str) -> ModelConfig | None:
        return self._kernel.config.runs.models.get(model_id)

    # -- create ------------------------------------------------------------------------------------

    def prepare_create(self, caller: Caller, model_id: str, body: Any) -> Prepared:
        """Every check of a run create, in order: scope, model, body, media, queue, credits.

        Nothing is stored until ``commit``, which runs inside its caller's unit of work
        (``sim.journal``): the reservation, the input assets, the run and its place in the queue
        or a slot all go, and no event is published, if it fails half-way.
        """
        caller.require("runs:write", "runs:read")
        spec = find_model(model_id)
        if spec is None:
            raise NotFound("model.not_found", f"No model {model_id}.")
        model_config = self._model_config(model_id)
        if not spec.available or model_config is None:
            raise Conflict("model.unavailable", f"{model_id} is not available for new runs.")
        config = self._kernel.config
        request = parse_body(spec, body, config)
        media: dict[str, MediaInput] = {}
        if isinstance(request.input, PortraitVideoInput):
            fields: tuple[tuple[str, str, Modality], ...] = (
                ("input.image", request.input.image, "image"),
                ("input.audio", request.input.audio, "audio"),
            )
            for param, value, modality in fields:
                media[param] = resolve_media(self._assets, caller.org_id, param, value, modality)
        self._check_queue(caller.org_id)
        credits = credits_for(
            estimate_units(spec, request.input, media, config), model_config.credits_per_unit
        )
        self._billing.ensure_can_reserve(caller.org_id, credits)

        def commit() -> dict[str, Any]:
            return self._open(caller, spec, model_config, request, media, credits)

        return Prepared(commit)

    create = committed(prepare_create)

    def _open(
        self,
        caller: Caller,
        spec: ModelSpec,
        model_config: ModelConfig,
        request: RunRequest,
        media: dict[str, MediaInput],
        credits: int,
    ) -> dict[str, Any]:
        """Store a checked run and queue it; each change registers its undo."""
        journal = self._kernel.journal
        clock = self._kernel.clock
        run = Run(
            id=self._kernel.ids.new("run"),
            org_id=caller.org_id,
            model=spec.id,
            model_revision=spec.revision,
            operation=request.operation.name,
            pricing_version=model_config.pricing_version,
            internal_model=spec.internal,
            created_at=clock.now,
            events=RunEventLog(clock, self._kernel.ids),
            external_id=request.external_id,
            metadata=request.metadata,
            input=request.input,
        )
        # Each undo is registered before its change (and is safe if the change never happened),
        # so a change that fails half-way is undone too.
        journal.on_undo(lambda: self._billing.cancel_reservation(run.id))
        self._billing.reserve_run(
            RunCharge(
                run_id=run.id,
                org_id=run.org_id,
                model=run.model,
                operation=run.operation,
                pricing_version=run.pricing_version,
                internal_model=spec.internal,
            ),
            credits,
        )
        run.reserved = credits
        run.media = {param: self._store_input(run, item) for param, item in media.items()}
        journal.on_undo(lambda: self._runs.pop(run.id, None))
        self._runs[run.id] = run
        org_runs = self._by_org.setdefault(run.org_id, [])
        journal.on_undo(lambda: discard(org_runs, run))
        org_runs.append(run)
        journal.on_undo(lambda: self._queued.get(run.org_id, {}).pop(run.id, None))
        self._move(run, "create", _QUEUED)
        journal.on_undo(lambda: self._slots.undo_admit(run))
        admitted = self._slots.admit(run)
        if not admitted:
            assert run.capacity_deadline is not None
            self._emit(
                run,
                "run.capacity_wait",
                {
                    "status": "waiting",
                    "message": CAPACITY_WAIT_MESSAGE,
                    "deadline_at": clock.timestamp(run.capacity_deadline),
                },
            )
        return self._render(run)

    def _store_input(self, run: Run, item: MediaInput) -> MediaInput:
        if item.inline is None:
            assert item.asset is not None
            if item.asset.id not in run.referenced_asset_ids:
                run.referenced_asset_ids.append(item.asset.id)
            return item
        stored = self._assets.store(
            run.org_id,
            modality=item.modality,
            scope="run_input",
            media_type=item.media_type,
            content=StoredBytes(item.inline),
            owner_run_id=run.id,
            width=item.width,
            height=item.height,
            duration_ms=item.duration_ms,
        )
        run.owned_asset_ids.append(stored.id)
        return replace(item, asset=stored, inline=None)  # the bytes now live in the asset

    def _check_queue(self, org_id: str) -> None:
        """429 ``queue_full`` at ``max_queued_runs_per_org`` queued runs (GAP-RUN-8); retry when
        the first of them leaves the queue at the latest (starts, or hits its deadline)."""
        queued = self._queued.get(org_id, {})
        if len(queued) < self._kernel.config.runs.max_queued_runs_per_org:
            return
        now = self._kernel.clock.now
        soonest = min(
            0.0 if run.capacity_deadline is None else run.capacity_deadline - now
            for run in queued.values()
        )
        raise RateLimited(
            "queue_full",
            "Too many runs are queued for this organization.",
            retry_after=max(1, math.ceil(soonest)),
        )

    # -- execution -----------------------------------------------------------------------------

    def _dispatch(self, run: Run) -> None:
        # Inside an operation the run starts once the operation has succeeded (``sim.journal``).
        self._kernel.journal.defer(lambda: self._kernel.clock.env.process(self._execute(run)))

    def _execute(self, run: Run) -> Generator[simpy.Event, Any, None]:
        if run.status is not RunStatus.QUEUED:  # canceled before it could start
            return
        env = self._kernel.clock.env
        model_config = self._model_config(run.model)
        assert model_config is not None
        run.started_at = self._kernel.clock.now
        self._move(run, "start", {"started_at": self._kernel.clock.timestamp(run.started_at)})
        run.duration = sample(model_config.duration, self._kernel.streams.stream("runs.durations"))
        fails = self._kernel.streams.stream("runs.failures").random() < (
            model_config.failure_probability
        )
        steps = len(self._progress) + 1
        for step in range(1, steps + 1):
            yield env.timeout(run.duration / steps)
            if not _running(run):
                return  # canceled meanwhile
            if step < steps:
                progress = self._progress[step - 1]
                run.progress = progress["progress"]
                self._emit(run, "run.progress", progress)
        if fails:
            self._finish_failed(
                run, "model_error", "model_error", "The model failed to produce an output."
            )
        else:
            self._finish_succeeded(run)

    def _finish_succeeded(self, run: Run) -> None:
        produced = produce(self._kernel, self._assets, run, run.input, run.media)
        for item in produced.outputs:
            run.outputs.append(item)
            # An output part is on the run's log only, rendered from its item when read.
            run.events.append("run.output", item, part_id=item.part_id)
        run.files = dict(produced.files)
        model_config = self._model_config(run.model)
        assert model_config is not None
        charged = min(run.reserved, credits_for(produced.units, model_config.credits_per_unit))
        self._billing.settle_run(run.id, charged)
        run.charged, run.reserved = charged, 0
        run.progress = 1.0
        run.completed_at = self._kernel.clock.now
        self._slots.release(run)
        self._move(run, "complete", {"credits_charged": charged})

    def _finish_failed(self, run: Run, trigger: str, code: str, message: str) -> None:
        run.error = {"code": code, "message": message}
        run.completed_at = self._kernel.clock.now
        self._billing.release_run(run.id)
        run.reserved = 0
        self._slots.release(run)
        self._move(run, trigger, {"error": dict(run.error)})

    def _expire(self, run: Run) -> None:
        self._finish_failed(
            run,
            "capacity_timeout",
            "capacity_timeout",
            "No run capacity became free before the capacity-wait deadline.",
        )

    # -- transitions and events ------------------------------------------------------------------

    def _move(self, run: Run, trigger: str, data: Mapping[str, Any]) -> None:
        """Apply a declared transition and append its event."""
        row = next_run_status(None if trigger == "create" else run.status, trigger)
        run.status = row.target
        queued = self._queued.setdefault(run.org_id, {})
        if row.target is RunStatus.QUEUED:
            queued[run.id] = run
        else:
            queued.pop(run.id, None)
        if run.terminal:  # only its execution reads its input: a finished run keeps none
            run.input, run.media = None, {}
        self._emit(run, row.event, data)

    def _emit(
        self, run: Run, type_: str, data: Mapping[str, Any], part_id: str = LIFECYCLE_PART
    ) -> None:
        sequence = run.events.append(type_, data, part_id=part_id)
        if type_ not in _RUN_LOG_ONLY:
            self._kernel.events.emit(
                type_,
                run.org_id,
                {
                    "object": self._render(run),
                    "sequence": sequence,
                    **data,
                },
            )

    # -- reads -----------------------------------------------------------------------------------

    def _get(self, org_id: str, run_id: str) -> Run:
        run = self._runs.get(run_id)
        if run is None or run.org_id != org_id:
            raise NotFound("run.not_found", f"No run {run_id}.")
        return run

    def _eta(self, run: Run) -> Eta | None:
        """GAP-RUN-9: only while queued with capacity or running, never while waiting for
        capacity (no honest bound) nor once terminal."""
        model_config = self._model_config(run.model)
        if model_config is None or run.deleted_at is not None:
            return None
        if run.status is RunStatus.QUEUED and run.holds_slot:
            return remaining_time(model_config.duration, 0.0)
        if run.status is RunStatus.RUNNING and run.started_at is not None:
            return remaining_time(model_config.duration, self._kernel.clock.now - run.started_at)
        return None

    def _render(self, run: Run) -> dict[str, Any]:
        return run.to_resource(self._kernel.clock, self._eta(run))

    def retrieve(self, caller: Caller, run_id: str) -> dict[str, Any]:
        caller.require("runs:read")
        return self._render(self._get(caller.org_id, run_id))

    def status(self, caller: Caller, run_id: str) -> dict[str, Any]:
        caller.require("runs:read")
        run = self._get(caller.org_id, run_id)
        return run.to_status(self._kernel.clock, self._eta(run))

    def events(
        self, caller: Caller, run_id: str, *, starting_after: int | None, limit: int
    ) -> dict[str, Any]:
        caller.require("runs:read")
        limits = self._kernel.config.limits
        validate_limit(limit, limits.page_size_min, limits.run_events_page_size_max)
        run = self._get(caller.org_id, run_id)
        return run.events.page(starting_after=starting_after, limit=limit)

    def list(self, caller: Caller, *, limit: int, starting_after: str | None) -> dict[str, Any]:
        caller.require("runs:read")
        return paginate(
            self._by_org.get(caller.org_id, [])[::-1],
            limit=limit,
            starting_after=starting_after,
            limits=self._kernel.config.limits,
            render=self._render,
        )

    # -- cancel ----------------------------------------------------------------------------------

    def cancel(self, caller: Caller, run_id: str) -> dict[str, Any]:
        caller.require("runs:write")
        run = self._get(caller.org_id, run_id)
        if run.terminal:
            raise Conflict("run.not_cancelable", f"Run {run_id} is already {run.status}.")
        self._slots.withdraw(run)
        run.completed_at = self._kernel.clock.now
        self._billing.release_run(run.id)
        run.reserved = 0
        self._move(run, "cancel", {})
        self._slots.release(run)  # after the event: the next run starts from a settled state
        return self._render(run)

    # -- deletion --------------------------------------------------------------------------------

    def delete(self, caller: Caller, run_id: str) -> dict[str, Any]:
        """Tombstone now, purge later (RUN-DEL-1, GAP-RUN-7). A deletion whose purge failed may
        be requested again: the run stays tombstoned and a new purge is queued."""
        caller.require("runs:write")
        plan = self._kernel.config.billing.plan(self._accounts.organization(caller.org_id).plan_key)
        if not plan.run_deletion:
            raise PermissionDenied(
                "plan.feature_unavailable", "Run deletion is available on enterprise plans only."
            )
        run = self._get(caller.org_id, run_id)
        previous = self._last_deletion.get(run.id)
        if previous is not None and previous.status is not DeletionStatus.FAILED:
            raise Conflict("run.already_deleted", f"Run {run_id} is already deleted.")
        if not run.terminal:
            raise Conflict("run.not_deletable", f"Run {run_id} is {run.status}; cancel it first.")
        self._purges.check_capacity()
        clock = self._kernel.clock
        now = clock.now  # the request's moment: the deletion's, and the tombstone's if new
        deletion = RunDeletion(
            id=self._kernel.ids.new("run_deletion"),
            run_id=run.id,
            org_id=run.org_id,
            requested_at=now,
            status=next_deletion_status(None, "request").target,
        )
        self._deletions.append(deletion)
        self._last_deletion[run.id] = deletion
        if run.deleted_at is None:
            run.deleted_at = now
            run.outputs = []
            run.files = {}
            run.metadata = {}
            run.events.redact_outputs()
            self._emit(
                run,
                "run.deleted",
                {"deletion_id": deletion.id, "deleted_at": clock.timestamp(run.deleted_at)},
            )
        self._purges.enqueue(deletion)
        return deletion.to_resource(clock)

    def _purge(self, deletion: RunDeletion) -> int:
        """Purge the run's own assets; return how many referenced inputs were retained."""
        run = self._runs[deletion.run_id]
        for asset_id in run.owned_asset_ids:
            self._assets.purge(self._assets.get(run.org_id, asset_id))
        return len(run.referenced_asset_ids)


def _running(run: Run) -> bool:
    """Re-read the status after a yield (a cancel may have moved the run meanwhile)."""
    return run.status is RunStatus.RUNNING
