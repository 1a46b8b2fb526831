"""One conformance run: every registered check against one target, into one ``Report``.

Order matters on a real deployment: the scenario checks run first, while the per-key session
cap and the create rate limit are untouched, then the fuzz (which may use both up). Every
response a scenario sees is also judged by every response check.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from harness.conformance import lifecycle, scenarios  # noqa: F401  (they register checks)
from harness.conformance.checks import CHECKS, CheckFailed, Skipped
from harness.conformance.fuzz import fuzz
from harness.conformance.report import CheckResult, FailureRecord, Outcome, Report
from harness.conformance.target import Exchange, Target, TargetUnreachable

__all__ = ["RunOptions", "run"]

_FAILURES_PER_CHECK = 5


@dataclass(frozen=True, slots=True)
class RunOptions:
    max_examples: int = 20
    seed: int = 0


def run(target: Target, options: RunOptions | None = None) -> Report:
    """Run every check against ``target``; failures are collected, never raised."""
    options = options or RunOptions()
    secrets = target.credentials.secrets()
    applied: dict[str, int] = defaultdict(int)
    failures: dict[str, list[FailureRecord]] = defaultdict(list)

    def record(name: str, message: str, exchange: Exchange | None) -> None:
        if len(failures[name]) < _FAILURES_PER_CHECK:
            for secret, placeholder in secrets.items():
                message = message.replace(secret, placeholder)
            curl = exchange.curl(secrets) if exchange is not None else None
            operation = exchange.operation if exchange is not None else ""
            failures[name].append(FailureRecord(message, operation, curl))

    def observe(exchange: Exchange) -> None:
        if exchange.path.startswith("/_sim/"):
            return  # the simulator's admin API is outside the contract
        for check in CHECKS.values():
            if check.kind != "response" or check.response is None:
                continue
            try:
                if check.response(exchange):
                    applied[check.name] += 1
            except CheckFailed as failure:
                applied[check.name] += 1
                record(check.name, failure.message, failure.exchange or exchange)

    skipped: dict[str, str] = {}
    target.observers.append(observe)
    try:
        for check in list(CHECKS.values()):
            if check.kind != "scenario" or check.scenario is None:
                continue
            missing = [role for role in check.needs if target.credentials.get(role) is None]
            if missing:
                skipped[check.name] = "needs " + ", ".join(f"--{_flag(r)}" for r in missing)
                continue
            try:
                check.scenario(target)
                applied[check.name] += 1
            except CheckFailed as failure:
                applied[check.name] += 1
                record(check.name, failure.message, failure.exchange)
            except Skipped as reason:
                skipped[check.name] = str(reason)
            except TargetUnreachable:
                raise
            except Exception as exc:  # an answer so far off the contract the script broke
                applied[check.name] += 1
                record(check.name, f"the check could not finish: {exc!r}", None)
        fuzzed = fuzz(target, max_examples=options.max_examples, seed=options.seed)
    finally:
        target.observers.remove(observe)
    for found in fuzzed.failures:
        record(found.check, f"{found.operation}: {found.message}", found.exchange)
    for name, count in fuzzed.applied.items():
        applied[name] += count
    results = []
    for check in CHECKS.values():
        if check.kind == "fuzz" and options.max_examples <= 0:
            skipped.setdefault(check.name, "fuzzing off (--max-examples 0)")
        outcome: Outcome
        if failures.get(check.name):
            outcome = "failed"
        elif check.name in skipped:
            outcome = "skipped"
        elif applied.get(check.name, 0) == 0:
            outcome = "skipped"
            skipped[check.name] = "no response this check applies to was seen"
        else:
            outcome = "passed"
        results.append(
            CheckResult(
                name=check.name,
                kind=check.kind,
                requirements=check.requirements,
                description=check.description,
                outcome=outcome,
                applied=applied.get(check.name, 0),
                skip_reason=skipped.get(check.name) if outcome == "skipped" else None,
                failures=tuple(failures.get(check.name, ())),
            )
        )
    return Report(
        base_url=target.base_url,
        seed=options.seed,
        max_examples=options.max_examples,
        cases=fuzzed.cases,
        results=tuple(results),
        errors=tuple(fuzzed.errors),
    )


def _flag(role: str) -> str:
    return {
        "other_org": "other-org-key",
        "runs_read": "runs-read-key",
        "runs_write": "runs-write-key",
        "revoked": "revoked-key",
        "admin": "sim-admin-token",
    }.get(role, role)
