"""One conformance run: every registered check against one target, into one ``Report``.

Order matters on a real deployment: the scenario checks run first (by their ``order``, then in
registration order), while the per-key session cap and the create rate limit are untouched, then
the fuzz (which may use both up). Every response a scenario sees is also judged by every response
check. A failure's request body that a shell argument cannot carry byte for byte is kept in the
report (``Report.bodies``) and its ``curl`` reads it from a file (``--data-binary @file``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.conformance import (  # noqa: F401  (they register checks)
    avatars,
    billing,
    lifecycle,
    responses,
    runs,
    scenarios,
    sessions,
)
from harness.conformance.checks import CHECKS, Check, CheckFailed, Skipped
from harness.conformance.context import Context, Inputs
from harness.conformance.coverage import coverage_of
from harness.conformance.fuzz import fuzz
from harness.conformance.report import BODIES_DIR, CheckResult, FailureRecord, Outcome, Report
from harness.conformance.responses import write_only_values
from harness.conformance.target import Exchange, Target, TargetUnreachable

__all__ = ["CHECKS", "RunOptions", "run"]

_FAILURES_PER_CHECK = 5


@dataclass(frozen=True)
class RunOptions:
    """How to run: fuzzing, what the user supplied, which checks (all when ``only`` is None),
    and where to announce real-time waits."""

    max_examples: int = 20
    seed: int = 0
    inputs: Inputs = field(default_factory=Inputs)
    only: frozenset[str] | None = None
    say: Callable[[str], None] | None = None


def _available(check: Check, ctx: Context) -> str | None:
    """Why ``check`` cannot run against this target, or ``None``."""
    missing = []
    for need in check.needs:
        if need == "time":
            if not ctx.has_time:
                missing.append("--sim-admin-token or --real-time")
        elif ctx.target.credentials.get(need) is None:
            missing.append(f"--{_flag(need)}")
    return "needs " + ", ".join(missing) if missing else None


def run(target: Target, options: RunOptions | None = None) -> Report:
    """Run every check against ``target``; failures are collected, never raised."""
    options = options or RunOptions()
    chosen = [c for c in CHECKS.values() if options.only is None or c.name in options.only]
    secrets = target.credentials.secrets()
    applied: dict[str, int] = defaultdict(int)
    failures: dict[str, list[FailureRecord]] = defaultdict(list)
    bodies: dict[str, bytes] = {}
    ctx = Context(target, options.inputs, say=options.say or (lambda _message: None))

    def record(name: str, message: str, exchange: Exchange | None) -> None:
        if len(failures[name]) >= _FAILURES_PER_CHECK:
            return
        for secret, placeholder in secrets.items():
            message = message.replace(secret, placeholder)
        curl = None
        if exchange is not None:
            body_file = None
            if not exchange.body_fits_inline():
                body_file = f"{BODIES_DIR}/{len(bodies) + 1:03d}.bin"
                bodies[body_file] = exchange.request_body
            curl = exchange.curl(secrets, body_file)
        operation = exchange.operation if exchange is not None else ""
        failures[name].append(FailureRecord(message, operation, curl))

    def observe(exchange: Exchange) -> None:
        if exchange.path.startswith("/_sim/"):
            return  # the simulator's admin API is outside the contract
        for check in chosen:
            if check.kind != "response" or check.response is None:
                continue
            try:
                if check.response(exchange):
                    applied[check.name] += 1
            except CheckFailed as failure:
                applied[check.name] += 1
                record(check.name, failure.message, failure.exchange or exchange)

    skipped: dict[str, str] = {}
    scenario_checks = sorted(
        (c for c in chosen if c.kind == "scenario" and c.scenario is not None),
        key=lambda c: c.order,
    )
    fuzz_wanted = options.max_examples > 0 and any(c.kind != "scenario" for c in chosen)
    target.observers.append(observe)
    try:
        with write_only_values(frozenset(ctx.worker_tokens())):
            for check in scenario_checks:
                reason = _available(check, ctx)
                if reason is not None:
                    skipped[check.name] = reason
                    continue
                assert check.scenario is not None
                try:
                    check.scenario(ctx)
                    applied[check.name] += 1
                except CheckFailed as failure:
                    applied[check.name] += 1
                    record(check.name, failure.message, failure.exchange)
                except Skipped as why:
                    skipped[check.name] = str(why)
                except TargetUnreachable:
                    raise
                except Exception as exc:  # an answer so far off the contract the script broke
                    applied[check.name] += 1
                    record(check.name, f"the check could not finish: {exc!r}", None)
            ctx.cleanup()
            fuzzed = fuzz(
                target,
                max_examples=options.max_examples if fuzz_wanted else 0,
                seed=options.seed,
            )
    finally:
        target.observers.remove(observe)
    names = {c.name for c in chosen}
    for found in fuzzed.failures:
        if found.check in names:
            record(found.check, f"{found.operation}: {found.message}", found.exchange)
    for name, count in fuzzed.applied.items():
        applied[name] += count
    results = [_result(c, options, applied, failures, skipped) for c in chosen]
    coverage = coverage_of((r.requirements, r.skip_reason) for r in results)
    return Report(
        base_url=target.base_url,
        seed=options.seed,
        max_examples=options.max_examples,
        cases=fuzzed.cases,
        results=tuple(results),
        errors=tuple(fuzzed.errors),
        coverage=coverage,
        bodies=bodies,
    )


def _result(
    check: Check,
    options: RunOptions,
    applied: Mapping[str, int],
    failures: Mapping[str, list[FailureRecord]],
    skipped: dict[str, str],
) -> CheckResult:
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
    return CheckResult(
        name=check.name,
        kind=check.kind,
        requirements=check.requirements,
        description=check.description,
        outcome=outcome,
        applied=applied.get(check.name, 0),
        skip_reason=skipped.get(check.name) if outcome == "skipped" else None,
        failures=tuple(failures.get(check.name, ())),
    )


def _flag(role: str) -> str:
    return {
        "other_org": "other-org-key",
        "runs_read": "runs-read-key",
        "runs_write": "runs-write-key",
        "revoked": "revoked-key",
        "admin": "sim-admin-token",
    }.get(role, role)
