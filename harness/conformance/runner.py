"""One conformance run: every registered check against one target, into one ``Report``.

How the run spends the target's limits and its own time:

* Scenario checks are scheduled, not merely listed. Each declares how many sessions it creates
  and with which key; the run lends a check a key only when that key can send its creates within
  the seed's rate limit at once, and meanwhile runs the checks that create nothing (or that use
  the other organization's key). ``order`` runs a check later among the ready ones, and a check of
  order ``LATE`` or more waits until every earlier one has run (a fitting or a run's events have
  had time to happen by then). A check marked ``quiet`` (the create rate limit's own) starts only
  once its key has made no create for a whole window, as far as this run has seen.
* Every check has a budget: ``REQUEST_ALLOWANCE_SECONDS`` of wall time for its requests plus its
  own ``budget`` of target seconds of waiting (scaled by the clock); pacing waits extend it. The
  run as a whole ends by ``--max-wait`` plus the sum of the budgets, whatever the target does.
* A target that stops answering (a request times out twice) ends the run early; what was not run
  is reported as such, and the run exits 2 unless a check already failed.

Every response a scenario sees is also judged by every response check, and the run's watch of
session statuses (``terminal_states_final``) sees them all. Then schemathesis fuzzes the profile.
A failure's request body that a shell argument cannot carry byte for byte is kept in the report
(``Report.bodies``) and its ``curl`` reads it from a file (``--data-binary @file``).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.conformance import (  # noqa: F401  (they register checks)
    access,
    avatars,
    billing,
    lifecycle,
    listing,
    responses,
    runs,
    sessions,
    watch,
)
from harness.conformance.checks import (
    CHECKS,
    LATE,
    BeyondTime,
    Check,
    CheckFailed,
    Incomplete,
    NotApplicable,
    NotChecked,
)
from harness.conformance.clock import TargetClock
from harness.conformance.context import Context
from harness.conformance.coverage import coverage_of
from harness.conformance.fuzz import fuzz
from harness.conformance.inputs import Inputs
from harness.conformance.model import SeedModel, Verdict
from harness.conformance.report import (
    BODIES_DIR,
    CheckResult,
    FailureRecord,
    Outcome,
    Proof,
    Report,
)
from harness.conformance.responses import write_only_values
from harness.conformance.target import Exchange, Target, TargetStalled, TargetUnreachable
from harness.conformance.watch import watching

__all__ = ["CHECKS", "LATE", "REQUEST_ALLOWANCE_SECONDS", "RunOptions", "run"]

_FAILURES_PER_CHECK = 5
#: Wall seconds every scenario check may spend on its requests, beyond its waiting budget.
REQUEST_ALLOWANCE_SECONDS = 60.0
#: Wall seconds the fuzz may take.
FUZZ_ALLOWANCE_SECONDS = 240.0
#: Requests that may time out before the run stops as a whole.
_STALLS_TOLERATED = 2

#: The flag that provides each role a check may need, and what it is.
FLAGS = {
    "other_org": ("--other-org-key", "a key of another organization"),
    "runs_read": ("--runs-read-key", "a key limited to runs:read"),
    "runs_write": ("--runs-write-key", "a key limited to runs:write"),
    "revoked": ("--revoked-key", "a revoked key"),
}


@dataclass(frozen=True)
class RunOptions:
    """How to run: fuzzing, what the user supplied, which checks (all when ``only`` is None),
    the clock (the admin clock when the credentials carry the admin token, else real time),
    where to announce progress, and the wall clock budgets are kept on."""

    max_examples: int = 20
    seed: int = 0
    inputs: Inputs = field(default_factory=Inputs)
    only: frozenset[str] | None = None
    say: Callable[[str], None] | None = None
    clock: TargetClock | None = None
    wall: Callable[[], float] = time.monotonic


@dataclass
class _Outcomes:
    """What the run found, check by check, while it runs."""

    secrets: dict[str, str]
    applied: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[str, list[FailureRecord]] = field(default_factory=lambda: defaultdict(list))
    not_checked: dict[str, NotChecked] = field(default_factory=dict)
    proofs: dict[str, Proof] = field(default_factory=dict)
    bodies: dict[str, bytes] = field(default_factory=dict)
    #: Model rules judged at their edge at least once.
    edges: set[str] = field(default_factory=set)

    def judge(self, verdicts: list[Verdict]) -> None:
        """Record the model's verdicts."""
        for verdict in verdicts:
            self.applied[verdict.rule] += 1
            if verdict.failure is not None:
                self.fail(verdict.rule, verdict.failure, verdict.exchange)
            elif verdict.edge and verdict.rule not in self.edges:
                # The proof of a rule is the first exchange that showed it at its edge.
                self.edges.add(verdict.rule)
                self.proofs.pop(verdict.rule, None)
                self.prove(verdict.rule, verdict.exchange)
            else:
                self.prove(verdict.rule, verdict.exchange)

    def fail(self, name: str, message: str, exchange: Exchange | None) -> None:
        if len(self.failures[name]) >= _FAILURES_PER_CHECK:
            return
        for secret, placeholder in self.secrets.items():
            message = message.replace(secret, placeholder)
        curl = None
        if exchange is not None:
            body_file = None
            if not exchange.body_fits_inline():
                body_file = f"{BODIES_DIR}/{len(self.bodies) + 1:03d}.bin"
                self.bodies[body_file] = exchange.request_body
            curl = exchange.curl(self.secrets, body_file)
        operation = exchange.operation if exchange is not None else ""
        self.failures[name].append(FailureRecord(message, operation, curl))

    def prove(self, name: str, exchange: Exchange | None) -> None:
        if exchange is not None and name not in self.proofs:
            self.proofs[name] = Proof.of(exchange, self.secrets)


def _missing(check: Check, ctx: Context) -> NotChecked | None:
    """Why ``check`` cannot run with what the run was given, or ``None``."""
    if "admin" in check.needs and not ctx.admin:
        return NotApplicable(
            "needs the simulator's admin API (--sim-admin-token, avatar-sim serve only) to "
            "bring the condition about"
        )
    missing = [
        FLAGS[need]
        for need in check.needs
        if need in FLAGS and ctx.target.credentials.get(need) is None
    ]
    if missing:
        return Incomplete(
            "needs " + " and ".join(what for _, what in missing),
            ", ".join(flag for flag, _ in missing),
        )
    return None


class _Schedule:
    """Which scenario check runs next, and with which key."""

    def __init__(self, checks: list[Check], ctx: Context) -> None:
        self.pending = sorted(checks, key=lambda c: c.order)
        self.ctx = ctx

    def roles(self, check: Check) -> list[str]:
        """The keys ``check`` may create with: its own, or for ``any`` each key given, except
        one a pending ``quiet`` check waits to find quiet (while another key is there)."""
        if check.key != "any":
            return [check.key]
        given = [
            r
            for r in ("api", "other_org")
            if self.ctx.target.credentials.get(r) is not None and self.ctx.blocked(r) is None
        ]
        reserved = {c.key for c in self.pending if c.quiet and c is not check}
        return [r for r in given if r not in reserved] or given or ["api"]

    def ready_at(self, check: Check, now: float) -> tuple[float, str]:
        """When ``check`` can start without waiting, and the key it would use. A check pinned
        to a key that a pending ``quiet`` check waits to find quiet waits for that check."""
        if check.creates == 0 and not check.quiet:
            return now, self.roles(check)[0]
        reserved = {c.key for c in self.pending if c.quiet and c is not check}
        if check.key in reserved:
            return math.inf, check.key
        options = []
        for role in self.roles(check):
            pacer = self.ctx.pacer(role)
            # A quiet check bursts past the pacing on purpose: it waits only for the quiet.
            at = pacer.quiet_at(now) if check.quiet else pacer.ready_at(now, check.creates)
            options.append((at, role))
        return min(options)

    def next(self) -> tuple[Check, str, float]:
        """The next check, its key and how long to wait before it (target seconds)."""
        early = min(c.order for c in self.pending)
        eligible = [c for c in self.pending if c.order < LATE or early >= LATE]
        now = self.ctx.now()
        # A quiet check ready to run goes first: the key it waited for must not make a create
        # in the meantime, and its burst is the longest wait of the run.
        timed = sorted(
            ((self.ready_at(c, now), c) for c in eligible), key=lambda item: not item[1].quiet
        )
        self.ctx.quiet_keys = {c.key for c in self.pending if c.quiet}
        for (at, role), check in timed:
            if at <= now:
                return check, role, 0.0
        (at, role), check = min(timed, key=lambda item: item[0][0])
        return check, role, at - now


def run(target: Target, options: RunOptions | None = None) -> Report:
    """Run every check against ``target``; failures are collected, never raised."""
    options = options or RunOptions()
    started = options.wall()
    chosen = [c for c in CHECKS.values() if options.only is None or c.name in options.only]
    out = _Outcomes(target.credentials.secrets())
    ctx = Context(
        target,
        options.inputs,
        clock=options.clock,
        say=options.say or (lambda _message: None),
        wall=options.wall,
    )
    model = SeedModel(
        target.credentials, ctx.now, audio_may_flow=options.inputs.transport is not None
    )
    ctx.model = model
    scenario_checks = [c for c in chosen if c.kind == "scenario" and c.scenario is not None]
    budget = options.inputs.max_wait_seconds + sum(
        REQUEST_ALLOWANCE_SECONDS + ctx.time.wall_seconds(c.budget) for c in scenario_checks
    )
    fuzz_wanted = options.max_examples > 0 and any(c.kind == "fuzz" for c in chosen)
    run_deadline = started + budget + (FUZZ_ALLOWANCE_SECONDS if fuzz_wanted else 0.0)
    ctx.run_deadline = started + budget
    ctx.say(f"the run ends within {budget / 60:.0f} min whatever the target does")
    seen_in_check: list[Exchange] = []

    def observe(exchange: Exchange) -> None:
        if exchange.path.startswith("/_sim/"):
            return  # the simulator's admin API is outside the contract
        seen_in_check.append(exchange)
        out.judge([v for v in model.observe(exchange) if v.rule in names])
        for check in chosen:
            if check.kind != "response" or check.response is None:
                continue
            try:
                if check.response(exchange):
                    out.applied[check.name] += 1
                    out.prove(check.name, exchange)
            except CheckFailed as failure:
                out.applied[check.name] += 1
                out.fail(check.name, failure.message, failure.exchange or exchange)

    names = {c.name for c in chosen}
    aborted: str | None = None
    stalls = 0
    fuzzed = None
    target.observers.append(observe)
    stamp, target.clock = target.clock, ctx.now
    try:
        with write_only_values(frozenset(ctx.worker_tokens())), watching(ctx.watch):
            schedule = _Schedule(scenario_checks, ctx)
            while schedule.pending:
                if aborted is not None or options.wall() > run_deadline:
                    why = aborted or "the run's time budget ran out before this check"
                    for check in schedule.pending:
                        out.not_checked[check.name] = Incomplete(f"not run: {why}")
                    break
                check, role, delay = schedule.next()
                missing = _missing(check, ctx)
                if missing is None and delay > 0:
                    try:
                        ctx.wait(delay, f"the create rate limit before {check.name}", pacing=True)
                    except NotChecked as why:
                        missing = why
                schedule.pending.remove(check)
                if missing is not None:
                    out.not_checked[check.name] = missing
                    continue
                seen_in_check.clear()
                try:
                    _run_check(check, role, ctx, out, options.wall)
                except TargetStalled as exc:
                    stalls += 1
                    out.not_checked[check.name] = Incomplete(f"the target stalled: {exc}")
                    if stalls >= _STALLS_TOLERATED:
                        aborted = f"the target stopped answering ({exc})"
                except TargetUnreachable as exc:
                    out.not_checked[check.name] = Incomplete(f"the target went away: {exc}")
                    aborted = f"the target could not be reached ({exc})"
                out.prove(check.name, ctx.proof or (seen_in_check[-1] if seen_in_check else None))
                for name, message, exchange in ctx.owed:
                    out.fail(name, message, exchange)
                ctx.owed.clear()
                if aborted is None:
                    out.judge([v for v in ctx.settle_suspicions() if v.rule in names])
            if aborted is None:
                try:
                    ctx.cleanup()
                    fuzzed = fuzz(
                        target,
                        max_examples=options.max_examples if fuzz_wanted else 0,
                        seed=options.seed,
                        deadline=min(run_deadline, options.wall() + FUZZ_ALLOWANCE_SECONDS),
                        wall=options.wall,
                        observe=lambda e: out.judge(
                            [v for v in model.observe(e) if v.rule in names]
                        ),
                    )
                    out.judge([v for v in ctx.settle_suspicions() if v.rule in names])
                except TargetUnreachable as exc:
                    aborted = f"the target stopped answering during the fuzz ({exc})"
    finally:
        target.observers.remove(observe)
        target.clock = stamp
    if fuzzed is not None:
        for found in fuzzed.failures:
            if found.check in names:
                out.fail(found.check, f"{found.operation}: {found.message}", found.exchange)
        for name, count in fuzzed.applied.items():
            out.applied[name] += count
    results = tuple(_result(c, options, out, fuzzed is not None) for c in chosen)
    return Report(
        base_url=target.base_url,
        seed=options.seed,
        max_examples=options.max_examples,
        cases=fuzzed.cases if fuzzed is not None else 0,
        results=results,
        errors=tuple(fuzzed.errors) if fuzzed is not None else (),
        coverage=coverage_of(results),
        bodies=out.bodies,
        seconds=options.wall() - started,
        aborted=aborted,
    )


def _run_check(
    check: Check, role: str, ctx: Context, out: _Outcomes, wall: Callable[[], float]
) -> None:
    assert check.scenario is not None
    ctx.creator = role
    ctx.proof = None
    ctx.deadline = wall() + REQUEST_ALLOWANCE_SECONDS + ctx.time.wall_seconds(check.budget)
    try:
        check.scenario(ctx)
        out.applied[check.name] += 1
    except CheckFailed as failure:
        out.applied[check.name] += 1
        out.fail(check.name, failure.message, failure.exchange)
    except NotChecked as why:
        out.not_checked[check.name] = why
    except TargetUnreachable:
        raise
    except Exception as exc:  # an answer so far off the contract the script broke
        out.applied[check.name] += 1
        out.fail(check.name, f"the check could not finish: {exc!r}", None)
    finally:
        ctx.deadline = None
        ctx.creator = "api"


def _result(check: Check, options: RunOptions, out: _Outcomes, fuzz_ran: bool) -> CheckResult:
    failures = tuple(out.failures.get(check.name, ()))
    why = out.not_checked.get(check.name)
    applied = out.applied.get(check.name, 0)
    if check.kind == "model":
        return _rule_result(check, out, failures, applied)
    if check.kind == "fuzz" and why is None and applied == 0:
        if options.max_examples <= 0:
            why = Incomplete("fuzzing off (--max-examples 0)", "--max-examples 20")
        elif not fuzz_ran:
            why = Incomplete("not run: the run stopped before the fuzz")
    if why is None and applied == 0 and not failures:
        why = (
            NotApplicable("the run met nothing this check applies to, and cannot bring it about")
            if check.opportunistic
            else Incomplete("no response this check applies to was seen")
        )
    outcome: Outcome
    if failures:
        outcome = "failed"
    elif isinstance(why, BeyondTime):
        outcome = "beyond_time"
    elif isinstance(why, NotApplicable):
        outcome = "not_applicable"
    elif why is not None:
        outcome = "incomplete"
    else:
        outcome = "passed"
    flag = None
    if isinstance(why, Incomplete) and outcome == "incomplete":
        flag = why.flag
    elif isinstance(why, BeyondTime) and outcome == "beyond_time":
        flag = why.how
    reason = why.reason if why is not None and outcome != "failed" else None
    return _check_result(check, outcome, applied, reason, failures, out, flag)


def _rule_result(
    check: Check, out: _Outcomes, failures: tuple[FailureRecord, ...], applied: int
) -> CheckResult:
    """A model rule: failed, passed at its edge, ``partly`` (judged, never at its edge), or
    ``unreached`` (no exchange of the run came under it)."""
    outcome: Outcome
    reason = None
    if failures:
        outcome = "failed"
    elif applied and check.name in out.edges:
        outcome = "passed"
    elif applied:
        outcome, reason = "partly", f"never judged at its edge: {check.edge}"
    else:
        outcome, reason = "unreached", f"no exchange of this run came under it ({check.edge})"
    return _check_result(check, outcome, applied, reason, failures, out)


def _check_result(
    check: Check,
    outcome: Outcome,
    applied: int,
    reason: str | None,
    failures: tuple[FailureRecord, ...],
    out: _Outcomes,
    flag: str | None = None,
) -> CheckResult:
    """The report's line for ``check``; a proof is kept for what was judged."""
    judged = outcome in ("passed", "failed", "partly")
    return CheckResult(
        name=check.name,
        kind=check.kind,
        requirements=check.requirements,
        description=check.description,
        outcome=outcome,
        applied=applied,
        skip_reason=reason,
        flag=flag,
        failures=failures,
        proof=out.proofs.get(check.name) if judged else None,
    )
