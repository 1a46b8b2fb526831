"""Capacity planning under service-level objectives (``avatar-sim plan``).

The Python API, for a notebook or a script::

    from harness.plan import plan_capacity

    result = plan_capacity(
        "scenarios/monday_peak.yaml",            # or a Scenario (recorded arrivals too)
        ["no_capacity_rate<=0.01", "p95_placement_wait_seconds<=5"],
        step=3600,                               # seconds per step
        replications=5,                          # per candidate at first, and per confirmation
        max_replications=20,                     # doubled up to this while a step is undecided
        lead_time=600,                           # seconds a worker asked for takes to join
        worker_cost=1.2,                         # per worker-hour (optional)
        workers=2,                               # local processes (or dask_client=Client(...))
    )
    result.table                  # plan.csv: each step's workers, when to ask and serve, each
                                  # objective's interval, decision, worker-hours, baselines
    result.search                 # search.csv: every size tried with its intervals
    result.confirmation           # per (plan, step, metric): estimate, interval, met, shown
    result.schedule               # [(instant, workers to ask for)], the overlay's pool_schedule
    result.scenario_with_plan()   # the overlay's scenario: what to run, serve or deploy
    result.demand.covers          # what the 95 % covers, and on how many recorded days
    result.verdict, result.exit_code   # one line; 1 when unmet or missed beyond doubt
    result.warnings               # binding limits per step, steps capped or quiet, old names
    result.write("out/plan")      # plan.csv, search.csv, confirmation.csv, plan.yaml, report.md

What a plan sizes for (``harness.plan.planner``, ``harness.plan.demand``), how a step is searched
(``harness.plan.adaptive``) and simulated (``harness.plan.search``), when to ask for workers
(``harness.plan.schedule``), the confirmation (``harness.plan.confirm``), the Erlang-C and
M/M/c+D baselines (``harness.plan.baseline``) and which objectives a plan accepts
(``harness.plan.slo``, ``harness.plan.feasible``) are each said in their module.
"""

from __future__ import annotations

from harness.plan.baseline import ErlangModel, StepDemand, erlang_a_workers, erlang_c_workers
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
    "erlang_a_workers",
    "erlang_c_workers",
    "parse_slo",
    "parse_slos",
    "plan_capacity",
]
