"""The context a conformance script receives (``Context``): the shared state and sessions of
``context_base`` and ``context_creates``, and runs: the catalog, a run create the target accepts
(``--model`` and ``--run-json``, else bodies built from each model's ``request_schemas``), the
first run, runs watched until they finish, and the usage a replay must not move.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.conformance.answers import is_success, refusal_code
from harness.conformance.checks import Incomplete
from harness.conformance.context_creates import CreatingContext
from harness.conformance.inputs import RunPlan
from harness.conformance.instances import minimal_instance
from harness.conformance.model import Verdict

__all__ = ["Context"]


@dataclass
class Context(CreatingContext):
    """One run's shared state; scripts receive it and never keep their own."""

    def models(self) -> list[dict[str, Any]]:
        """The catalog the key sees (``GET /v1/models``)."""
        if "models" not in self.cache:
            listed = self.target.request("GET", "/v1/models", operation="listModels")
            body = listed.json() if listed.status == 200 else None
            data = body.get("data") if isinstance(body, dict) else None
            self.cache["models"] = [m for m in data or [] if isinstance(m, dict) and m.get("id")]
        return list(self.cache["models"])

    def run_plan(self) -> RunPlan:
        """A run create the target accepts: ``--model``/``--run-json`` if given, else a body
        built from each listed, available model's ``request_schemas`` until one is accepted.
        The accepted run's exchange is kept (``first_run``) for the checks that need one."""
        if "plan" not in self.cache:
            self.cache["plan"] = self._find_plan()
        value = self.cache["plan"]
        if isinstance(value, Incomplete):
            raise value
        assert isinstance(value, RunPlan)
        return value

    def first_run(self) -> dict[str, Any]:
        self.run_plan()
        run = self.cache["first_run"]
        assert isinstance(run, dict)
        return run

    def candidates(self, media_first: bool = False) -> Iterator[RunPlan]:
        """Run creates worth trying: ``--model``/``--run-json``, else one per operation of each
        listed model's ``request_schemas`` (models with media outputs first if asked)."""
        models = self.models()
        if self.inputs.models:
            listed = {str(m.get("id")): m for m in models}
            models = [listed.get(m, {"id": m, "available": True}) for m in self.inputs.models]

        def rank(model: dict[str, Any]) -> tuple[bool, bool]:
            outputs = model.get("output_modalities") or []
            media = any(m in ("audio", "image", "video") for m in outputs)
            return model.get("available") is not True, media_first and not media

        models.sort(key=rank)
        for model in models:
            model_id = str(model["id"])
            given = self.inputs.body_for(model_id)
            if given is not None:
                yield RunPlan(model_id, dict(given))
                continue
            schemas = model.get("request_schemas")
            for operation, schema in (schemas or {}).items() if isinstance(schemas, dict) else ():
                instance = minimal_instance(schema)
                if instance is not None:
                    yield RunPlan(model_id, {"operation": operation, "input": instance})

    def finished_run(self, run_id: str, within: float) -> dict[str, Any]:
        """The run once it shows ``completed_at`` (run status names are a gap), or as it last
        was after ``within`` target seconds."""

        def fetch() -> Any:
            exchange = self.target.request("GET", f"/v1/runs/{run_id}", operation="retrieveRun")
            return exchange.json()

        run = self.poll(
            fetch,
            lambda r: isinstance(r, dict) and r.get("completed_at") is not None,
            within=within,
            step=2.0,
            why="a run to finish",
        )
        return run if isinstance(run, dict) else {}

    def _find_plan(self) -> RunPlan | Incomplete:
        tried: list[str] = []
        for plan in self.candidates():
            exchange = self.target.request(
                "POST", plan.path, json_body=dict(plan.body), operation="createRun"
            )
            if is_success(exchange) and isinstance(exchange.json(), dict):
                self.cache["first_run"] = exchange.json()
                self.cache["first_run_exchange"] = exchange
                return plan
            if exchange.status in (402, 429, 503):
                code = refusal_code(exchange) or exchange.status
                return Incomplete(f"the target refused to create a run ({code})")
            tried.append(f"{plan.model} {exchange.status} {refusal_code(exchange)}")
            if len(tried) >= 8:
                break
        if not tried:
            return Incomplete(
                "the target lists no model with request_schemas", "--model and --run-json"
            )
        return Incomplete(
            "the target refused every run body built from request_schemas ("
            + "; ".join(tried)
            + ")",
            "--model and --run-json",
        )

    def quiesce_runs(self, within: float) -> None:
        """Wait until every run of this organization the run knows shows ``completed_at``
        (so that no charge lands between two reads a script compares)."""
        if self.model is None:
            return
        for run_id, _ in list(self.model.runs.model.items()):
            if self.model.ownership.owner.get(run_id) == "own":
                self.finished_run(run_id, within)

    def judge_no_charge(self, before: Any, after: Any, what: str) -> None:
        """``what`` was a replay: the organization's usage took no second charge."""
        from harness.conformance.model.idempotency_table import IDEMPOTENCY

        def charged(usage: Any) -> Any:
            return usage.get("credits_charged") if isinstance(usage, dict) else None

        if not isinstance(charged(before), int | float) or not isinstance(
            charged(after), int | float
        ):
            return
        exchange = self.proof
        if charged(after) > charged(before):
            self.record(Verdict.failed(
                IDEMPOTENCY, exchange,
                f"{what} took a second charge: credits_charged rose from {charged(before)} to "
                f"{charged(after)}",
            ))  # fmt: skip
        else:
            self.record(Verdict.passed(IDEMPOTENCY, exchange, edge=True))
