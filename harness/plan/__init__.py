"""Capacity planning under service-level objectives (``avatar-sim plan``).

The Python API, for a notebook or a script::

    from harness.plan import plan_capacity

    result = plan_capacity(
        "scenarios/monday_peak.yaml",            # or a Scenario (recorded arrivals too)
        ["no_capacity_rate<=0.01", "p95_placement_wait_seconds<=5"],
        step=3600,                               # seconds per step
        replications=5,                          # per candidate, and per confirmation
        worker_cost=1.2,                         # per worker-hour (optional)
        workers=2,                               # local processes (or dask_client=Client(...))
    )
    result.table                  # plan.csv: start, workers, each objective's metric and
                                  # 95 % interval, worker_hours, cost, arrivals, Erlang-C size
    result.confirmation           # per (plan, step, metric): estimate, interval, met, shown
    result.schedule               # [(start, workers)], the scenario's pool_schedule
    result.scenario_with_plan()   # the scenario with the plan as its pool_schedule
    result.warnings               # binding limits, steps not shown met, renamed metrics
    result.write("out/plan")      # plan.csv, confirmation.csv, figures and report.md

How it searches (``harness.plan.planner``), what each step simulates (``harness.plan.search``),
the Erlang-C baseline and its readings of each metric (``harness.plan.baseline``) and which
objectives a plan accepts (``harness.plan.slo``) are each said in their module.
"""

from __future__ import annotations

from harness.plan.baseline import ErlangModel, StepDemand, erlang_c_workers
from harness.plan.planner import PlanError, PlanResult, StepPlan, plan_capacity
from harness.plan.slo import SLO_METRICS, Slo, SloError, parse_slo, parse_slos

__all__ = [
    "SLO_METRICS",
    "ErlangModel",
    "PlanError",
    "PlanResult",
    "Slo",
    "SloError",
    "StepDemand",
    "StepPlan",
    "erlang_c_workers",
    "parse_slo",
    "parse_slos",
    "plan_capacity",
]
