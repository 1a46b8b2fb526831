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

from harness.collect import collect
from harness.plan.slo import Slo
from harness.runner.engine import simulate
from harness.runner.metrics import CAUSES, summarize
from harness.scenarios.model import PoolChange, Scenario
from harness.sweep.aggregate import aggregate

__all__ = [
    "Evidence",
    "WindowTask",
    "derived_seed",
    "evidence",
    "retry_span",
    "run_window",
    "with_schedule",
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


def run_window(task: WindowTask) -> dict[str, Any]:
    """Simulate ``task`` at ``records: summary`` and return every metric of each window, and
    ``busy_at_start``: the workers busy when the window begins (the carry-over)."""
    raw = simulate(
        task.scenario,
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


def with_schedule(scenario: Scenario, schedule: Sequence[tuple[float, int]]) -> Scenario:
    """``scenario`` at ``records: summary`` with ``schedule`` (start, workers) as its pool
    schedule (the scenario's own faults still override it while they last)."""
    changes = tuple(PoolChange(at=at, workers=workers) for at, workers in schedule)
    return scenario.model_copy(update={"pool_schedule": changes, "records": "summary"})


def retry_span(scenario: Scenario) -> float:
    """The longest a client keeps retrying a create after its first attempt (every backoff at
    its longest, jitter included; a ``Retry-After`` is bounded by the same delays)."""
    client = scenario.client
    span = 0.0
    for attempt in range(client.max_attempts - 1):
        delay = min(client.base_delay * client.multiplier**attempt, client.max_delay)
        span += delay * (1 + client.jitter)
    return span


@dataclass(frozen=True, slots=True)
class Evidence:
    """A candidate's simulations of one step, over replications: each objective's estimate and
    95 % interval (``table``: one row per metric, as ``harness.sweep.aggregate``), whether
    every objective's unfavourable bound meets its target, whether the pool ever saturated
    (a session waited or failed, or a create was refused ``at_capacity``), and the counts."""

    workers: int
    table: pd.DataFrame
    meets: bool
    saturated: bool
    counts: dict[str, float]

    def bound(self, slo: Slo) -> float:
        row = self.table[self.table["metric"] == slo.metric].iloc[0]
        return slo.unfavourable(float(row["ci_low"]), float(row["ci_high"]))


def evidence(workers: int, rows: Sequence[dict[str, float]], slos: Sequence[Slo]) -> Evidence:
    """``Evidence`` from one metrics row per replication."""
    runs = pd.DataFrame(list(rows))
    runs["point"] = 0
    table = aggregate(runs, (), [slo.metric for slo in slos])
    meets = True
    for slo in slos:
        row = table[table["metric"] == slo.metric].iloc[0]
        mean, low, high = (float(row[k]) for k in ("mean", "ci_low", "ci_high"))
        bound = slo.unfavourable(low, high)
        # An interval that cannot be formed (too few sessions) is met only by an undefined
        # estimate (nothing to serve); else the estimate alone is not evidence enough.
        if math.isnan(bound):
            meets &= math.isnan(mean)
        else:
            meets &= slo.holds(bound)
    counts = {name: float(runs[name].sum()) for name in COUNTS}
    signs = ("waited_sessions", "no_capacity", "at_capacity_refusals")
    saturated = any(counts[name] > 0 or math.isnan(counts[name]) for name in signs)
    return Evidence(workers, table, meets, saturated, counts)
