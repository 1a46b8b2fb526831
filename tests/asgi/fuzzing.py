"""In-process schemathesis 4 runs against the facade (HAR-1).

``fuzz(max_examples=…)`` builds a fresh platform and app, loads ``spec/openapi.yaml`` into
schemathesis, points its ASGI transport at the app and runs the engine the CLI runs: every phase
(examples, coverage, fuzzing in positive and negative mode, stateful through the spec's links)
with every built-in check. The result counts the generated cases per phase and lists each failure
and engine error as text, so a test can assert "zero" and show what went wrong otherwise.

Why this platform configuration (the only deviations from the defaults):

* rate limits are out of reach: the virtual clock does not move during a fuzz, so per-minute
  windows would answer nearly every create with 429 after the first few and starve the stateful
  phase of sessions and runs to follow links from; 429 handling is tested directly elsewhere. The
  limits stay on (with a window no fuzz can fill) rather than off, because an answer of a limited
  operation carries the `X-RateLimit-*` headers the contract requires only while a limit exists;
* the per-key session cap is raised to the enterprise plan's organization cap, for the same
  reason; the organization cap stays below workers + queue, so ``at_capacity`` (a 503, which the
  ``not_a_server_error`` check would count) cannot happen;
* the fuzzer's key is the unrestricted key of an enterprise organization, the one plan allowed to
  delete runs, so ``DELETE /v1/runs/{run_id}`` can succeed.

Semantic refusals. A few rules cannot be written in JSON Schema, so some schema-valid requests
are refused with 422 by design: a cursor that names no item (``validation.cursor``), the usage
window and time-zone rules (``usage.*``), the content of an uploaded image
(``avatar.image_invalid``) and a run's ``input``, validated against the model's own request schema
(GAP-RUN-3). For exactly those operations ``positive_data_acceptance`` also accepts 422, and this
runner audits every such answer itself: a positive case may be refused only with the code (and on
the parameter) listed in ``SEMANTIC_REFUSALS``; anything else is reported as a failure.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import schemathesis
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema
from schemathesis.generation.modes import GenerationMode

from sim.asgi import create_app
from sim.asgi.openapi import load_openapi
from sim.config import LimitsConfig, RateLimitConfig, SimConfig
from sim.platform import Platform
from tests.asgi.support import make_org

__all__ = ["SEMANTIC_REFUSALS", "FuzzReport", "fuzz", "fuzz_config"]

#: operationId -> the (code, param prefix) of the 422s schema-valid data may legitimately get.
SEMANTIC_REFUSALS: dict[str, tuple[tuple[str, str], ...]] = {
    "listSessions": (("validation.cursor", "starting_after"),),
    "listAvatars": (("validation.cursor", "starting_after"),),
    "listRuns": (("validation.cursor", "starting_after"),),
    "listAssets": (("validation.cursor", "starting_after"),),
    "getUsage": (("usage.window_invalid", ""), ("usage.timezone_invalid", "timezone")),
    "createAvatar": (("avatar.image_invalid", "image"),),
    "createRun": (("validation.", "input"), ("validation.enum", "operation")),
}


@dataclass
class FuzzReport:
    cases: int = 0
    cases_by_phase: Counter[str] = field(default_factory=Counter)
    checks_run: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop_reason: str | None = None

    def summary(self) -> str:
        lines = [f"{self.cases} cases: {dict(self.cases_by_phase)}; stop: {self.stop_reason}"]
        lines += [f"FAILURE {text}" for text in self.failures[:20]]
        lines += [f"ERROR {text}" for text in self.errors[:20]]
        return "\n".join(lines)


#: A per-window request limit far above what any fuzz run sends.
_UNREACHABLE = 1_000_000


def fuzz_config() -> SimConfig:
    """The platform configuration of a fuzz run (see the module docstring for why)."""
    defaults = SimConfig()
    enterprise = defaults.billing.plan("enterprise")
    limits = defaults.limits.model_copy(
        update={
            "concurrent_sessions_per_key": enterprise.concurrent_sessions,
            "rate": RateLimitConfig(
                session_creates_per_window=_UNREACHABLE,
                run_creates_per_window=_UNREACHABLE,
                avatar_creates_per_window=_UNREACHABLE,
                run_deletes_per_window=_UNREACHABLE,
            ),
        }
    )
    return defaults.model_copy(update={"limits": LimitsConfig.model_validate(limits.model_dump())})


def fuzz(*, max_examples: int, seed: int = 1, stateful_steps: int | None = None) -> FuzzReport:
    """One full schemathesis run against a fresh in-process app."""
    platform = Platform.create(fuzz_config())
    org = make_org(platform, "Fuzz Enterprise", "enterprise")
    app = create_app(platform)
    stateful: dict[str, Any] = {}
    if stateful_steps is not None:
        stateful["max-steps"] = stateful_steps
    config = SchemathesisConfig.from_dict(
        {
            "seed": seed,
            "headers": {"Authorization": f"Bearer {org.keys['unrestricted']}"},
            "workers": 1,
            "generation": {"mode": "all", "max-examples": max_examples},
            "phases": {"stateful": stateful},
            "checks": {"enabled": True},
            "operations": [
                {
                    "include-operation-id": operation_id,
                    "checks": {"positive_data_acceptance": {"expected-statuses": _ACCEPTED_422}},
                }
                for operation_id in SEMANTIC_REFUSALS
            ],
        }
    )
    schema = schemathesis.openapi.from_dict(copy.deepcopy(dict(load_openapi())), config=config)
    schema.app = app
    report = FuzzReport()
    for event in from_schema(schema).execute():
        _record(report, event)
    return report


_ACCEPTED_422 = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]


def _record(report: FuzzReport, event: events.EngineEvent) -> None:
    if isinstance(event, events.ScenarioFinished):
        recorder = event.recorder
        report.cases += len(recorder.cases)
        report.cases_by_phase[str(event.phase.value)] += len(recorder.cases)
        _audit_semantic_refusals(report, recorder)
        for case_id, checks in recorder.checks.items():
            for check in checks:
                report.checks_run[check.name] += 1
                if check.status == Status.FAILURE and check.failure_info is not None:
                    node = recorder.cases.get(case_id)
                    label = node.value.operation.label if node is not None else "?"
                    failure = check.failure_info.failure
                    report.failures.append(
                        f"[{check.name}] {label}: {failure.title}\n{failure.message}\n"
                        f"{check.failure_info.code_sample}"
                    )
    elif isinstance(event, events.NonFatalError):
        report.errors.append(f"{event.label}: {event.info.format()}")
    elif isinstance(event, events.FatalError):
        report.errors.append(f"fatal: {event.exception!r}")
    elif isinstance(event, events.EngineFinished):
        report.stop_reason = str(event.stop_reason.value)


def _audit_semantic_refusals(report: FuzzReport, recorder: Any) -> None:
    """A positive case answered 422 must carry one of its operation's documented codes."""
    for case_id, node in recorder.cases.items():
        case = node.value
        meta = case.meta
        if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
            continue
        interaction = recorder.interactions.get(case_id)
        response = getattr(interaction, "response", None)
        if response is None or response.status_code != 422:
            continue
        allowed = SEMANTIC_REFUSALS.get(str(case.operation.definition.raw.get("operationId")), ())
        try:
            error = json.loads(response.content)["error"]
        except (ValueError, KeyError, TypeError):
            error = {}
        code, param = str(error.get("code")), str(error.get("param") or "")
        if not any(code.startswith(c) and param.startswith(p) for c, p in allowed):
            report.failures.append(
                f"[semantic_refusals_only] {case.operation.label}: schema-valid data refused "
                f"with 422 {code} (param {param!r}), which is not a documented semantic rule"
            )
