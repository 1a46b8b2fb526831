"""The simulations a plan runs: one step's window at a candidate pool size, and a whole
schedule's confirmation, each over replications, as plain picklable tasks.

Why windows: a plan decides one step at a time, and a step's metrics depend on the steps before
it only through what is still running when it begins (sessions placed earlier hold their
workers; a queue may be waiting). So a step is simulated from a warm-up before it, with the
earlier steps' chosen sizes in the pool's schedule, to its end; clients stop arriving at the
step's end, and the run goes on for a tail (the start-up timeout and the clients' retries) so
that every session created in the step has its outcome. The queue is FIFO, so clients that would
arrive after the step could not change what happened to the ones before them. The warm-up
starts empty; it is long enough when the sessions running at the step's start began within it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.plan.slo import Slo
from harness.runner.engine import simulate
from harness.runner.metrics import CAUSES, METRICS, summarize
from harness.runner.tables import collect
from harness.scenarios.model import Scenario
from harness.sweep.aggregate import CONFIDENCE, aggregate, clip, t_interval, wilson_interval
from harness.sweep.aggregate import METHOD_LABELS as AGGREGATE_LABELS
from harness.sweep.aggregate import METHODS as AGGREGATE_METHODS

__all__ = [
    "COUNTS",
    "METHODS",
    "METHOD_LABELS",
    "Evidence",
    "WindowTask",
    "derived_seed",
    "evidence",
    "idle",
    "intervals",
    "judged",
    "measured",
    "retry_span",
    "run_window",
]

#: The counts a plan keeps of every simulation besides its objectives' metrics: the refusals by
#: cause (the binding-limit warnings read them) and what shows the pool never saturated.
COUNTS: tuple[str, ...] = (
    "session_clients",
    *(f"refused_{cause}" for cause in CAUSES),
    "sessions_created",
    "waited_sessions",
    "no_capacity",
    "at_capacity_refusals",
)


@dataclass(frozen=True, slots=True)
class WindowTask:
    """One replication of one simulation: ``scenario`` (its pool schedule set) with ``seed``,
    clients arriving in ``[arrivals_from, arrivals_until)``, run to ``end``, measured over each
    of ``windows``. ``point`` and ``replication`` label it."""

    point: int
    replication: int
    seed: int
    scenario: Scenario
    arrivals_from: float
    arrivals_until: float
    end: float
    windows: tuple[tuple[float, float], ...]


def measured(scenario: Scenario) -> Scenario:
    """``scenario`` as a plan simulates it: at ``records: summary``, and without the usage
    summaries read at the end of the run (``usage_timezones``), which no metric of a plan
    reads and which happen after everything a metric counts."""
    return scenario.model_copy(update={"records": "summary", "usage_timezones": ()})


def run_window(task: WindowTask) -> dict[str, Any]:
    """Simulate ``task`` as a plan does (``measured``) and return every metric of each window,
    and ``busy_at_start``: the workers busy when the window begins (the carry-over)."""
    raw = simulate(
        measured(task.scenario),
        task.seed,
        arrivals_from=task.arrivals_from,
        arrivals_until=task.arrivals_until,
        end=task.end,
    )
    result = collect(raw, release=True)
    pool = result.utilization
    windows = []
    for start, end in task.windows:
        metrics = summarize(result, (start, end))
        at_start = pool.loc[pool["t"] == start, "busy"]
        # What the step inherits: sessions already on a worker when it begins.
        metrics["busy_at_start"] = float(at_start.iloc[0]) if len(at_start) else math.nan
        windows.append(metrics)
    return {
        "point": task.point,
        "replication": task.replication,
        "seed": task.seed,
        "windows": windows,
    }


def derived_seed(base: int, *parts: object) -> int:
    """A seed for one purpose of a plan (SHA-256 of the parts, 31 bits): the search of each
    step and the confirmation draw apart, so the confirmation's seeds are fresh."""
    text = ":".join(str(part) for part in (base, "plan", *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


def retry_span(scenario: Scenario) -> float:
    """How long a client keeps retrying a create after its first attempt, near enough: every
    backoff at its longest (jitter included) or, when the clients honour ``Retry-After``, the
    longer of that and what the queue (the start-up timeout) or the rate limit (its window)
    usually asks for. A ``Retry-After`` that waits for a busy worker to free can be longer; a
    client still retrying when the run ends counts as refused by its last answer."""
    client = scenario.client
    config = scenario.sim_config()
    asked = min(
        max(config.limits.startup_timeout_seconds, config.limits.rate.window_seconds),
        scenario.horizon,
    )
    span = 0.0
    for attempt in range(client.max_attempts - 1):
        delay = min(client.base_delay * client.multiplier**attempt, client.max_delay)
        delay *= 1 + client.jitter
        span += max(delay, asked) if client.honour_retry_after else delay
    return span


@dataclass(frozen=True, slots=True)
class Evidence:
    """A candidate's simulations of one step, over ``replications``: each objective's estimate
    and interval at ``confidence`` (``table``: one row per metric, as
    ``harness.sweep.aggregate``), whether every objective's unfavourable bound meets its target
    (``meets``), whether some objective's favourable bound misses it (``fails``: shown to miss;
    neither: undecided, more replications may tell), whether the pool ever saturated (a session
    waited or failed, or a create was refused ``at_capacity``), and the counts. A metric left
    undefined although clients came (a wait when no session was placed) is shown to miss."""

    workers: int
    table: pd.DataFrame
    meets: bool
    saturated: bool
    counts: dict[str, float]
    fails: bool = False
    replications: int = 0
    confidence: float = CONFIDENCE
    estimated: bool = True  # every objective's estimate (not its interval) meets its target

    @property
    def status(self) -> str:
        """``meets``, ``fails`` or ``undecided``."""
        return "meets" if self.meets else "fails" if self.fails else "undecided"

    def bound(self, slo: Slo) -> float:
        row = self.table[self.table["metric"] == slo.metric].iloc[0]
        return slo.unfavourable(float(row["ci_low"]), float(row["ci_high"]))


def idle(counts: dict[str, float]) -> bool:
    """Whether a window had nobody to serve: then an undefined metric has nothing to miss
    (otherwise it is undefined because nothing was served: a wait of placed sessions when none
    was placed, which is no evidence of meeting anything)."""
    return counts.get("session_clients", 0.0) == 0 and counts.get("sessions_created", 0.0) == 0


def judged(slo: Slo, mean: float, low: float, high: float, quiet: bool) -> tuple[bool, bool]:
    """(the estimate meets ``slo``, its interval's unfavourable end does too); an undefined
    value meets it only in a window with nobody to serve (``quiet``)."""
    bound = slo.unfavourable(low, high)
    met = quiet if math.isnan(mean) else slo.holds(mean)
    shown = (quiet and math.isnan(mean)) if math.isnan(bound) else (met and slo.holds(bound))
    return met, shown


#: Interval method → how to say it (``harness.sweep.aggregate.METHODS``, and the plan's own).
METHODS: dict[str, str] = {
    **AGGREGATE_METHODS,
    "wilson-or-t": (
        "the Wilson score interval on the counts pooled over the replications, widened to the "
        "Student t interval over the replications' own rates where that is wider"
    ),
}
METHOD_LABELS: dict[str, str] = {
    **AGGREGATE_LABELS,
    "wilson-or-t": "Wilson (pooled) or t intervals, the wider",
}


def intervals(
    runs: pd.DataFrame,
    params: Sequence[str],
    metrics: Sequence[str],
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """``harness.sweep.aggregate.aggregate`` of ``runs`` (one row per replication, a ``point``
    column), each proportion's Wilson interval widened to the t interval of the replications'
    own rates where that is wider (method ``wilson-or-t``); at ``confidence`` (95 % unless a
    plan splits its error over several looks, ``harness.plan.adaptive``).

    Why: the Wilson interval pools the sessions of every replication as independent trials,
    but sessions that share a busy period fail together, so a failure rate varies between
    replications more than that (``bench_plan``'s week, planned on the pooled interval alone,
    missed its ``no_capacity_rate`` target at 12 of its 168 steps when confirmed with fresh
    seeds, every miss beyond the search's upper bound)."""
    table = aggregate(runs, params, metrics)
    for index, row in table.iterrows():
        metric = str(row["metric"])
        values = runs.loc[runs["point"] == row["point"], metric].astype(float).tolist()
        if row["method"] != "wilson":
            if confidence != CONFIDENCE:
                low, high = clip(t_interval(values, confidence), METRICS[metric].bounds)
                table.loc[index, "ci_low"], table.loc[index, "ci_high"] = low, high
            continue
        pooled = float(row["ci_low"]), float(row["ci_high"])
        if confidence != CONFIDENCE and not pd.isna(row["trials"]):
            trials = int(row["trials"])
            successes = round(float(row["mean"]) * trials) if trials else 0
            pooled = wilson_interval(successes, trials, confidence)
        low, high = clip(t_interval(values, confidence), METRICS[metric].bounds)
        table.loc[index, "ci_low"] = pooled[0] if math.isnan(low) else min(pooled[0], low)
        table.loc[index, "ci_high"] = pooled[1] if math.isnan(high) else max(pooled[1], high)
        table.loc[index, "method"] = "wilson-or-t"
    return table


def evidence(
    workers: int,
    rows: Sequence[dict[str, float]],
    slos: Sequence[Slo],
    confidence: float = CONFIDENCE,
) -> Evidence:
    """``Evidence`` from one metrics row per replication, its intervals at ``confidence``."""
    runs = pd.DataFrame(list(rows))
    runs["point"] = 0
    table = intervals(runs, (), [slo.metric for slo in slos], confidence)
    counts = {name: float(runs[name].sum()) for name in COUNTS}
    quiet = idle(counts)
    meets = estimated = True
    fails = False
    for slo in slos:
        row = table[table["metric"] == slo.metric].iloc[0]
        mean, low, high = (float(row[k]) for k in ("mean", "ci_low", "ci_high"))
        met, shown = judged(slo, mean, low, high, quiet)
        meets &= shown
        estimated &= met
        favourable = low if slo.op == "<=" else high
        fails |= not math.isnan(favourable) and not slo.holds(favourable)
        # Undefined although clients came: nothing was served, which meets no objective.
        fails |= math.isnan(mean) and not quiet
    signs = ("waited_sessions", "no_capacity", "at_capacity_refusals")
    saturated = any(counts[name] > 0 for name in signs)
    return Evidence(
        workers, table, meets, saturated, counts, fails, len(rows), confidence, estimated
    )
