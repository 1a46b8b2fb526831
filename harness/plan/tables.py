"""A plan's tables: ``plan.csv`` (one row per step) and ``search.csv`` (every size tried).

Why these columns: a capacity engineer acts on ``plan.csv`` (when to ask for workers, when they
serve, what the pool holds and costs) and checks it against its evidence (each objective's
interval, the replications behind it, how the step was decided, the baselines beside it, the
limits that would refuse clients); ``search.csv`` holds every size the search simulated, so the
curve of workers against each objective can be drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from harness.plan.confirm import LIMIT_CAUSES
from harness.plan.schedule import held, pool_seconds

if TYPE_CHECKING:
    from harness.plan.planner import PlanResult

__all__ = ["plan_table", "search_table"]


def _when(result: PlanResult, seconds: float) -> pd.Timestamp:
    return result.epoch() + pd.Timedelta(seconds=seconds)


def plan_table(result: PlanResult) -> pd.DataFrame:
    """One row per step (``plan.csv``): when it starts, the workers it needs, when to ask
    for them and when they serve, the pool held, each objective's metric with its interval
    from the search at the chosen size (replications and confidence beside it), how it was
    decided, the worker-hours of the pool held (and cost), the step's expected arrivals and
    offered load, the Erlang-C and M/M/c+D sizes, and any limit that refused clients."""
    rows = []
    plan = result.schedule
    throttled = result.throttled
    for s in result.steps:
        hours = pool_seconds(plan, result.lead, s.start, s.end) / 3600
        ask = result.ask_at(s)
        row: dict[str, Any] = {
            "start": _when(result, s.start),
            "start_seconds": s.start,
            "end_seconds": s.end,
            "workers": s.workers,
            "ask_at": _when(result, ask),
            "ask_at_seconds": ask,
            "serve_from": _when(result, s.start),
            "pool_held": held(plan, result.lead, s.start),
        }
        chosen = s.tried[s.workers]
        for slo in result.slos:
            found = chosen.table[chosen.table["metric"] == slo.metric].iloc[0]
            row[slo.metric] = float(found["mean"])
            row[f"{slo.metric}_ci_low"] = float(found["ci_low"])
            row[f"{slo.metric}_ci_high"] = float(found["ci_high"])
        row["replications"] = chosen.replications
        row["confidence"] = chosen.confidence
        row["decision"] = s.decision
        row["shown"] = s.shown
        row["worker_hours"] = hours
        if result.worker_cost is not None:
            row["cost"] = hours * result.worker_cost
        row["arrivals"] = s.demand.arrivals
        row["offered_load"] = s.demand.offered_load
        row["erlang_c_workers"] = s.erlang_c
        erlang = pool_seconds(result.erlang_c_schedule, result.lead, s.start, s.end) / 3600
        row["erlang_c_worker_hours"] = erlang
        row["erlang_a_workers"] = s.erlang_a
        found_limits = throttled.get(s.index)
        refused = sum(found_limits[c] for c in LIMIT_CAUSES) if found_limits else 0.0
        clients = found_limits["session_clients"] if found_limits else 0.0
        row["refused_by_limits_share"] = refused / clients if clients else 0.0
        row["binding_limits"] = (
            " ".join(c for c in LIMIT_CAUSES if found_limits[c]) if found_limits else ""
        )
        rows.append(row)
    return pd.DataFrame(rows)


def search_table(result: PlanResult) -> pd.DataFrame:
    """Every size tried (``search.csv``): per step, size and objective, the replications,
    the estimate and its interval at the look's confidence, the method, and whether the
    size met, was shown to miss or was undecided; ``chosen`` marks the step's size."""
    rows = []
    chosen = {s.index: s.workers for s in result.steps}
    for index, size, found in result.record:
        for row in found.table.to_dict("records"):
            rows.append(
                {
                    "step": index,
                    "start_seconds": result.steps[index].start,
                    "workers": size,
                    "replications": found.replications,
                    "confidence": found.confidence,
                    "metric": row["metric"],
                    "mean": row["mean"],
                    "ci_low": row["ci_low"],
                    "ci_high": row["ci_high"],
                    "method": row["method"],
                    "status": found.status,
                    "saturated": found.saturated,
                    "chosen": chosen[index] == size,
                }
            )
    return pd.DataFrame(rows)
