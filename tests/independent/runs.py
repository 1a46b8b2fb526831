"""Model runs: creation, progress on the timeline, events, cancellation and deletion.

A run is queued at creation, starts a second later, produces one output a second (the media
model's audio, image and video outputs become assets) and then succeeds. Credits are reserved at
creation and charged on success. Deleting a run tombstones it at once (it stays listable with
empty content) and queues a purge of its assets that completes a few seconds later; the billing
rows stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .auth import Principal
from .catalog import MAX_EXTERNAL_ID, MAX_TEXT, MODELS, PRICING_VERSION, ModelSpec, operation_of
from .errors import ApiError, conflict, foreign, invalid, not_found
from .lists import page
from .store import Charge, Deletion, Run, RunEvent
from .validation import query_limit

if TYPE_CHECKING:
    from .service import Service

START_DELAY = 1.0
OUTPUT_INTERVAL = 1.0
PURGE_START = 1.0
PURGE_DONE = 3.0
MAX_CURSOR = 40
EVENTS_DEFAULT_LIMIT = 100
EVENTS_MAX_LIMIT = 500


class Runs:
    def __init__(self, service: Service) -> None:
        self.svc = service

    # -- creation -----------------------------------------------------------------------------

    def model(self, model_id: str) -> ModelSpec:
        model = MODELS.get(model_id)
        if model is None:
            raise not_found("model", model_id)
        return model

    def parse(self, model: ModelSpec, body: dict[str, Any]) -> dict[str, Any]:
        reading = self.svc.reading
        operation = operation_of(model, reading)
        for name in body:
            if name not in ("input", "operation", "external_id", "metadata"):
                raise invalid(reading, "parameter.unknown", f"Unknown field {name!r}.", name)
        raw_input = body.get("input")
        if raw_input is None:
            raise invalid(reading, "parameter.missing", "input is required.", "input")
        if not isinstance(raw_input, dict):
            raise invalid(reading, "parameter.invalid_type", "input must be an object.", "input")
        for name in raw_input:
            if name != "text":
                raise invalid(
                    reading, "parameter.unknown", f"Unknown field {name!r}.", f"input.{name}"
                )
        text = raw_input.get("text")
        if not isinstance(text, str) or not text:
            raise invalid(
                reading, "parameter.missing", "input.text must be a non-empty string.", "input.text"
            )
        if len(text) > MAX_TEXT:
            raise invalid(
                reading,
                "parameter.too_long",
                f"input.text is at most {MAX_TEXT} characters.",
                "input.text",
            )
        if body.get("operation") not in (None, operation):
            raise invalid(
                reading, "parameter.invalid_value", f"operation must be {operation}.", "operation"
            )
        external_id = body.get("external_id")
        if external_id is not None and (
            not isinstance(external_id, str) or len(external_id) > MAX_EXTERNAL_ID
        ):
            raise invalid(
                reading,
                "parameter.invalid_value",
                "external_id is a string of at most 128 characters.",
                "external_id",
            )
        metadata = body.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, dict):
            raise invalid(
                reading, "parameter.invalid_type", "metadata must be an object.", "metadata"
            )
        return {
            "text": text,
            "operation": operation,
            "external_id": external_id,
            "metadata": metadata,
        }

    def create(
        self, principal: Principal, model: ModelSpec, params: dict[str, Any], t: float
    ) -> Run:
        balance = self.svc.billing.quota_numbers(principal.org, t)["balance_credits"]
        if model.price > balance:
            raise ApiError(
                402, "insufficient_credits", "The organization's balance cannot cover this run."
            )
        store, tl = self.svc.store, self.svc.timeline
        run = Run(
            id=store.new_id("run", t),
            org_id=principal.org.id,
            key_id=principal.key.id,
            model=model.id,
            operation=params["operation"],
            status="queued",
            created_at=t,
            external_id=params["external_id"],
            metadata=params["metadata"],
            input={"text": params["text"]},
            price=model.price,
        )
        store.runs[run.id] = run
        self._event(run, "queued", None, {"status": "queued"}, t)
        run.timers.append(tl.schedule(t + START_DELAY, lambda at: self._start(run, model, at)))
        return run

    def _event(
        self, run: Run, kind: str, part_id: str | None, data: dict[str, Any], t: float
    ) -> None:
        first = 1 if self.svc.reading.run_events_cursor == "after" else 0
        run.events.append(
            RunEvent(
                first + len(run.events), self.svc.store.new_id("evt", t), kind, part_id, data, t
            )
        )

    def _start(self, run: Run, model: ModelSpec, t: float) -> None:
        if run.status != "queued":
            return
        run.status = "running"
        run.started_at = t
        self._event(run, "started", None, {"status": "running"}, t)
        for index, modality in enumerate(model.outputs, start=1):
            at = t + index * OUTPUT_INTERVAL
            run.timers.append(
                self.svc.timeline.schedule(
                    at, lambda at, i=index, m=modality: self._output(run, model, i, m, at)
                )
            )

    def _output(self, run: Run, model: ModelSpec, index: int, modality: str, t: float) -> None:
        if run.status != "running":
            return
        part_id = f"part_{index}"
        item: dict[str, Any] = {"modality": modality, "part_id": part_id}
        if modality == "text":
            item["text"] = f"You said: {run.input['text']}"
        else:
            asset = self.svc.assets.produce(run.org_id, run.id, modality, t)
            run.asset_ids.append(asset.id)
            item["asset_id"] = asset.id
        run.outputs.append(item)
        run.progress = round(index / len(model.outputs), 4)
        self._event(run, "output", part_id, {k: v for k, v in item.items() if k != "part_id"}, t)
        self._event(run, "progress", part_id, {"progress": run.progress}, t)
        if index == len(model.outputs):
            self._succeed(run, model, t)

    def _succeed(self, run: Run, model: ModelSpec, t: float) -> None:
        run.status = "succeeded"
        run.completed_at = t
        run.charged = run.price
        store = self.svc.store
        store.charges.append(
            Charge(
                id=store.new_id("chg", t),
                org_id=run.org_id,
                at=t,
                credits=run.price,
                surface=model.surface,
                model=model.id,
                operation=run.operation,
                run_id=run.id,
            )
        )
        self._event(run, "succeeded", None, {"status": "succeeded"}, t)

    # -- cancel and delete --------------------------------------------------------------------

    def cancel(self, run: Run, t: float) -> None:
        if run.terminal or run.deleted_at is not None:
            if self.svc.reading.cancel_terminal == "conflict":
                raise conflict("run.not_cancelable", f"The run is already {self._status(run)}.")
            return
        for timer in run.timers:
            timer.cancel()
        run.timers.clear()
        run.status = "canceled"
        run.completed_at = t
        self._event(run, "canceled", None, {"status": "canceled"}, t)

    def delete(self, principal: Principal, run: Run, t: float) -> Deletion:
        reading, faults = self.svc.reading, self.svc.faults
        if not run.terminal:
            raise conflict("run.active", "Cancel the run or let it finish before deleting it.")
        if run.deletion is not None:
            if reading.delete_repeat == "conflict":
                raise conflict("run.already_deleted", "The run has already been deleted.")
            return run.deletion
        deletion = Deletion(self.svc.store.new_id("rdel", t), run.id, "queued", t)
        run.deletion = deletion
        run.deleted_at = t
        if faults.on("run_delete_refunds_billing"):
            self.svc.store.charges[:] = [c for c in self.svc.store.charges if c.run_id != run.id]
        tl = self.svc.timeline
        tl.schedule(t + PURGE_START, lambda at: self._purge_start(deletion, at))
        tl.schedule(t + PURGE_DONE, lambda at: self._purge_done(run, deletion, at))
        return deletion

    def _purge_start(self, deletion: Deletion, t: float) -> None:
        deletion.status = "running"
        deletion.started_at = t

    def _purge_done(self, run: Run, deletion: Deletion, t: float) -> None:
        for asset_id in run.asset_ids:
            asset = self.svc.store.assets[asset_id]
            asset.deleted_at = t
            asset.content = b""
        deletion.status = "done"
        deletion.completed_at = t

    def render_deletion(self, deletion: Deletion) -> dict[str, Any]:
        clock = self.svc.clock
        body: dict[str, Any] = {
            "object": "run.deletion",
            "id": deletion.id,
            "run_id": deletion.run_id,
            "status": self.svc.reading.deletion_status_names[deletion.status],
            "requested_at": clock.iso(deletion.requested_at),
            "started_at": clock.iso(deletion.started_at)
            if deletion.started_at is not None
            else None,
            "completed_at": clock.iso(deletion.completed_at)
            if deletion.completed_at is not None
            else None,
            "error": None,
        }
        if self.svc.faults.on("deletion_requested_at_missing"):
            del body["requested_at"]
        return body

    # -- rendering ----------------------------------------------------------------------------

    def _status(self, run: Run) -> str:
        names = self.svc.reading.run_status_names
        if run.deleted_at is not None and self.svc.reading.deleted_status == "deleted":
            return names["deleted"]
        return names[run.status]

    def _eta(self, run: Run, t: float) -> dict[str, Any] | None:
        if run.terminal:
            return None
        model = MODELS[run.model]
        finish = run.started_at if run.started_at is not None else run.created_at + START_DELAY
        remaining = max(0.0, finish + model.duration * OUTPUT_INTERVAL - t)
        return {
            "p50_seconds": round(remaining, 3),
            "p95_seconds": round(remaining * 1.5, 3),
            "source": "deterministic_schedule",
        }

    def render(self, run: Run, base: str, t: float) -> dict[str, Any]:
        reading, faults, clock = self.svc.reading, self.svc.faults, self.svc.clock
        tombstone = run.deleted_at is not None
        show_content = not tombstone or faults.on("deleted_run_keeps_outputs")
        outputs: list[dict[str, Any]] = []
        files: dict[str, Any] = {}
        for item in run.outputs if show_content else []:
            out: dict[str, Any] = {"modality": item["modality"], "role": reading.output_role}
            if item["modality"] == "text":
                out["type"] = "text"
                out["text"] = item["text"]
            else:
                asset = self.svc.store.assets[item["asset_id"]]
                if not faults.on("run_media_output_missing_type"):
                    out["type"] = reading.output_file_type
                out["asset_id"] = asset.id
                out["file"] = self.svc.assets.file_object(asset, base, t)
                files[item["modality"]] = out["file"]
            outputs.append(out)
        if run.external_id is not None:
            external_id = run.external_id
        else:
            external_id = "" if reading.external_id_default == "empty" else run.id
        body: dict[str, Any] = {
            "id": run.id,
            "model": run.model,
            "model_revision": MODELS[run.model].revision,
            "operation": run.operation,
            "status": self._status(run),
            "progress": run.progress,
            "created_at": clock.iso(run.created_at),
            "started_at": clock.iso(run.started_at) if run.started_at is not None else None,
            "completed_at": clock.iso(run.completed_at) if run.completed_at is not None else None,
            "external_id": external_id,
            "metadata": {} if tombstone and not show_content else run.metadata,
            "credits": {
                "charged": run.charged,
                "reserved": 0 if run.terminal else run.price,
                "pricing_version": PRICING_VERSION,
            },
            "error": run.error,
            "outputs": outputs,
        }
        if run.external_id is None and faults.on("run_external_id_omitted"):
            del body["external_id"]
        if reading.optional_object_field:
            body = {"object": "run", **body}
        if tombstone:
            body["deleted_at"] = clock.iso(run.deleted_at)
        body.update(files)
        eta = self._eta(run, t)
        if eta is not None:
            body["eta"] = eta
        return body

    def render_status(self, run: Run, t: float) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": run.id,
            "status": self._status(run),
            "progress": run.progress,
            "error": run.error,
        }
        if run.error is None and self.svc.faults.on("run_status_error_omitted"):
            del body["error"]
        if self.svc.reading.optional_object_field:
            body = {"object": "run.status", **body}
        eta = self._eta(run, t)
        if eta is not None:
            body["eta"] = eta
        return body

    def render_event(self, run: Run, event: RunEvent) -> dict[str, Any]:
        reading = self.svc.reading
        part_id = event.part_id
        if part_id is None and not self.svc.faults.on("run_event_missing_part_id"):
            part_id = reading.lifecycle_part_id
        data = dict(event.data)
        if "status" in data:
            data["status"] = reading.run_status_names[data["status"]]
        return {
            "id": event.id,
            "sequence": event.sequence,
            "type": reading.run_event_types[event.kind],
            "part_id": part_id,
            "data": data,
            "created_at": self.svc.clock.iso(event.created_at),
        }

    # -- lookup and lists ---------------------------------------------------------------------

    def get(self, run_id: str, principal: Principal) -> Run:
        run = self.svc.store.runs.get(run_id)
        if run is None:
            raise not_found("run", run_id)
        if run.org_id != principal.org.id:
            raise foreign(self.svc.reading, "run", run_id)
        return run

    def list(
        self, principal: Principal, query: dict[str, str], base: str, t: float
    ) -> dict[str, Any]:
        reading, faults, store = self.svc.reading, self.svc.faults, self.svc.store
        limit = query_limit(query, reading, default=reading.default_page_size)
        cursor = query.get("starting_after")
        max_cursor = 26 if faults.on("runs_cursor_limit_too_short") else MAX_CURSOR
        if cursor is not None and len(cursor) > max_cursor:
            raise invalid(
                reading,
                "parameter.too_long",
                "The cursor is at most 40 characters.",
                "starting_after",
            )
        items = [r for r in store.runs.values() if r.org_id == principal.org.id]
        if faults.on("deleted_run_not_listed"):
            items = [r for r in items if r.deleted_at is None]
        items.sort(
            key=lambda r: (r.created_at, store.order_of(r.id)),
            reverse=reading.list_order == "newest_first",
        )
        return page(
            items,
            limit=limit,
            starting_after=cursor,
            id_of=lambda r: r.id,
            render=lambda r: self.render(r, base, t),
            reading=reading,
            faults=faults,
        )

    def events(self, run: Run, query: dict[str, str]) -> dict[str, Any]:
        reading, faults = self.svc.reading, self.svc.faults
        limit = query_limit(
            query,
            reading,
            default=EVENTS_DEFAULT_LIMIT,
            hi=EVENTS_MAX_LIMIT,
            refuse_at_or_above=EVENTS_MAX_LIMIT
            if faults.on("run_events_limit_500_refused")
            else None,
        )
        name = "starting_after" if reading.run_events_cursor == "after" else "offset"
        raw = query.get(name)
        cursor: int | None = None
        if raw is not None and raw != "":
            try:
                cursor = int(raw)
            except ValueError:
                cursor = -1
            if cursor < 0:
                raise invalid(
                    reading, "parameter.invalid_value", f"{name} must be an integer >= 0.", name
                )
        events = [] if run.deleted_at is not None else list(run.events)
        if cursor is not None:
            if reading.run_events_cursor == "after":
                events = [e for e in events if e.sequence > cursor]
            else:
                events = [e for e in events if e.sequence >= cursor]
        if faults.on("run_events_newest_first"):
            events.reverse()
        chunk = events[:limit]
        has_more = len(events) > limit
        body: dict[str, Any] = {
            "object": "list",
            "data": [self.render_event(run, e) for e in chunk],
            "has_more": has_more,
        }
        if chunk:
            last = chunk[-1].sequence
            nxt = last if reading.run_events_cursor == "after" else last + 1
            if faults.on("run_events_next_page_repeats"):
                nxt -= 1
            body["next_cursor"] = str(nxt) if faults.on("run_events_cursor_string") else nxt
        elif faults.on("next_cursor_null_on_empty"):
            body["next_cursor"] = None
        return body
