"""A plan's confirmation: its overlay run with fresh seeds, beside the Erlang-C schedule's.

What runs (PLAN-11): the overlay ``plan`` writes, as a deployment would play it (the scenario's
own limits, the provisioning lead time, the demand the plan drew), and the same overlay with the
Erlang-C schedule's asks instead, from the start to the end, ``replications`` times with seeds
the search never used (the same for both). Each step's window is measured as in the search.

Where the scenario's limits refuse clients before the pool (a concurrency cap, the rate limit,
credits) the overlay's confirmation measures only the clients let through, while the plan sized
for all of them (PLAN-7); the plan's schedule is then also confirmed with those limits lifted
(``plan_unthrottled``), which is what its objectives promise.

Per (plan, step, objective): the estimate and its 95 % interval, ``met`` (the estimate meets
the target), ``shown`` (so does the unfavourable end), ``shown_missed`` (the favourable end
misses it too: not bad luck at 95 %), and ``missed_beyond_doubt``: the favourable end of the
interval at ``1 - 0.05 / m`` misses it, m the plan's (step, objective) pairs, so that a plan
that does meet its objectives is called missed with at most 5 % chance over the whole day
(Bonferroni). That last column is what ``avatar-sim plan`` exits 1 on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from harness.plan.search import (
    COUNTS,
    WindowTask,
    derived_seed,
    idle,
    intervals,
    judged,
    run_window,
)
from harness.plan.slo import Slo
from harness.runner.metrics import CAUSES
from harness.scenarios.model import Scenario
from harness.sweep.aggregate import CONFIDENCE
from harness.sweep.execute import Runner

__all__ = ["LIMIT_CAUSES", "LIMIT_NAMES", "confirm", "refused_by_limits", "unthrottled"]

#: The refusal causes of limits that act before the pool, and how a report names them.
LIMIT_CAUSES: tuple[str, ...] = ("caps", "rate_limit", "credits")
LIMIT_NAMES: dict[str, str] = {
    "caps": "the concurrency caps (`concurrent_sessions`)",
    "rate_limit": "the create rate limit (`rate_limited`)",
    "credits": "credits running out (`insufficient_credits`)",
}
assert set(LIMIT_CAUSES) <= set(CAUSES)


def unthrottled(scenario: Scenario) -> Scenario:
    """``scenario`` with every limit that refuses clients before the pool lifted: the demand
    itself reaches the pool."""
    limits = scenario.limits.model_copy(
        update={"concurrency": "off", "rate": "off", "credits": "off"}
    )
    return scenario.model_copy(update={"limits": limits})


def confirm(
    schedules: Sequence[tuple[str, Scenario]],
    windows: tuple[tuple[float, float], ...],
    slos: tuple[Slo, ...],
    replications: int,
    end: float,
    runner: Runner,
    seed: int,
    progress: bool,
) -> pd.DataFrame:
    """Run each named scenario of ``schedules`` (its pool schedule set) ``replications`` times
    with the confirmation's seeds to ``end``, and judge every objective in every window."""
    tasks = []
    for point, (_name, scenario) in enumerate(schedules):
        for r in range(replications):
            tasks.append(
                WindowTask(
                    point=point,
                    replication=r,
                    seed=derived_seed(seed, "confirm", r),
                    scenario=scenario,
                    arrivals_from=0.0,
                    arrivals_until=math.inf,
                    end=end,
                    windows=windows,
                )
            )
    rows = runner.map(run_window, tasks, progress=progress, desc="confirm")
    names = [name for name, _ in schedules]
    flat = []
    for row in rows:
        for index, metrics in enumerate(row["windows"]):
            flat.append(
                {"point": row["point"] * len(windows) + index, "plan": names[row["point"]],
                 "step": index, "replication": row["replication"], **metrics}
            )  # fmt: skip
    runs = pd.DataFrame(flat)
    metrics = [slo.metric for slo in slos]
    table = intervals(runs, ("plan", "step"), metrics)
    pairs = len(windows) * len(slos)
    strict = intervals(runs, ("plan", "step"), metrics, 1.0 - (1.0 - CONFIDENCE) / pairs)
    grouped = runs.groupby(["plan", "step"])
    counts = grouped[list(COUNTS)].sum()
    counts["busy_at_start"] = grouped["busy_at_start"].mean()
    table = table.merge(counts.reset_index(), on=["plan", "step"], how="left")
    by_metric = {slo.metric: slo for slo in slos}
    verdicts = [
        judged(by_metric[str(row["metric"])], row["mean"], row["ci_low"], row["ci_high"],
               idle({name: float(row[name]) for name in COUNTS}))
        for row in table.to_dict("records")
    ]  # fmt: skip
    table["target"] = [by_metric[m].target for m in table["metric"]]
    table["op"] = [by_metric[m].op for m in table["metric"]]
    table["met"] = [met for met, _ in verdicts]
    table["shown"] = [shown for _, shown in verdicts]

    def missed(metric: str, low: float, high: float) -> bool:
        slo = by_metric[metric]
        favourable = low if slo.op == "<=" else high
        return not math.isnan(favourable) and not slo.holds(favourable)

    table["shown_missed"] = [
        missed(m, lo, hi)
        for m, lo, hi in zip(table["metric"], table["ci_low"], table["ci_high"], strict=True)
    ]
    table["missed_beyond_doubt"] = [
        missed(m, lo, hi)
        for m, lo, hi in zip(strict["metric"], strict["ci_low"], strict["ci_high"], strict=True)
    ]
    table["start_seconds"] = table["step"].map(dict(enumerate(start for start, _ in windows)))
    return table


def refused_by_limits(confirmation: pd.DataFrame, plan: str = "plan") -> pd.DataFrame:
    """Per step of ``plan``'s confirmation: the session clients, and those each limit acting
    before the pool refused (summed over the replications)."""
    rows = confirmation[confirmation["plan"] == plan].drop_duplicates(["step"])
    columns = ["step", "session_clients", *(f"refused_{cause}" for cause in LIMIT_CAUSES)]
    return rows[columns].set_index("step")
