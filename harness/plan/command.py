"""``avatar-sim plan SCENARIO --slo EXPR [--slo EXPR ...] [--step 1h] [--replications N]
[--max-replications N] [--lead-time D] [--exact-replay] [--as-limited] [--warmup D]
[--worker-cost X] [--workers N] [--dask ADDRESS] --out DIR``.

Finds, per step of the scenario, the fewest workers whose simulated metrics meet every objective
with 95 % confidence (adding replications while a step is undecided), confirms the overlay that
plays the plan with fresh seeds beside the Erlang-C per-step plan, and writes ``plan.csv``,
``search.csv``, ``confirmation.csv``, ``plan.yaml``, ``figures/`` and ``report.md`` into DIR
(``harness.plan``). Each step where a limit other than the pool would refuse clients is named.

Exit 0 when the plan is met; 1 when a step cannot be met at any size tried or the confirmation
misses an objective beyond doubt (the files are written, the verdict line says which); 2 on a
bad scenario, objective, step or warm-up, or an objective no pool can meet (every problem at
once).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.gc_policy import collect_rarely
from harness.plan.planner import DEFAULT_STEP, PlanError, plan_capacity
from harness.plan.slo import SloError, parse_slos
from harness.scenarios import ScenarioError, load_scenario
from harness.scenarios.durations import parse_duration
from harness.sweep.execute import DaskUnreachable, add_runner_arguments, connect_dask

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", help="scenario YAML file (recorded arrivals too)")
    parser.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="EXPR",
        help="an objective such as 'no_capacity_rate<=0.01' (repeat for several)",
    )
    parser.add_argument("--step", default="1h", help="length of a step (default 1h)")
    parser.add_argument(
        "--replications", type=int, default=5, help="per candidate at first, and per confirmation"
    )
    parser.add_argument(
        "--max-replications",
        type=int,
        default=None,
        help="a step's replications double up to this while undecided (default 4x)",
    )
    parser.add_argument(
        "--lead-time",
        default=None,
        help="how long a worker asked for takes to join (default: the scenario's "
        "provision_lead_seconds)",
    )
    parser.add_argument(
        "--exact-replay",
        action="store_true",
        help="replay recorded arrivals as recorded in every replication (default: a fresh "
        "day each, fitted to the recording)",
    )
    parser.add_argument(
        "--as-limited",
        action="store_true",
        help="size for what the scenario's limits let through (default: every client)",
    )
    parser.add_argument("--warmup", default=None, help="simulated before each step")
    parser.add_argument("--worker-cost", type=float, default=None, help="per worker-hour")
    parser.add_argument("--out", default="out/plan", help="directory for the plan's files")
    add_runner_arguments(parser)


def _seconds(text: str | None, name: str) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(float(text) if text.replace(".", "", 1).isdigit() else text)
    except ValueError as error:
        raise PlanError(f"--{name} {text!r}: {error}") from None


def run(args: argparse.Namespace) -> int:
    try:
        slos = parse_slos(args.slo)
        step = _seconds(args.step, "step")
        warmup = _seconds(args.warmup, "warmup")
        lead = _seconds(args.lead_time, "lead-time")
        scenario = load_scenario(args.scenario)
        if args.worker_cost is not None and args.worker_cost < 0:
            raise PlanError("--worker-cost must be >= 0")
        client = None if args.dask is None else connect_dask(args.dask)
    except (SloError, PlanError, ScenarioError, DaskUnreachable) as error:
        print(error, file=sys.stderr)
        return 2
    for slo in slos:
        if slo.note:
            print(f"note: {slo.note}", file=sys.stderr)
    try:
        result = plan_capacity(
            scenario,
            slos,
            step=DEFAULT_STEP if step is None else step,
            replications=args.replications,
            max_replications=args.max_replications,
            warmup=warmup,
            worker_cost=args.worker_cost,
            lead_time=lead,
            exact_replay=args.exact_replay,
            as_limited=args.as_limited,
            workers=args.workers,
            dask_client=client,
            setup=collect_rarely,  # in the worker processes this command starts
            progress=not args.no_progress,
            source=args.scenario,
        )
    except PlanError as error:
        print(error, file=sys.stderr)
        return 2
    finally:
        if client is not None:
            client.close()
    for warning in result.warnings:
        if not warning.startswith("note: "):  # the notes were printed above
            print(f"warning: {warning}", file=sys.stderr)
    out = Path(args.out)
    result.write(out)
    table = result.table
    assert result.demand is not None
    print(result.demand.covers)
    print(f"plan of {len(table)} steps: {table['worker_hours'].sum():,.0f} worker-hours", end="")
    print(f" (Erlang C: {table['erlang_c_worker_hours'].sum():,.0f})")
    print(f"plan written to {out}/ (plan.csv, search.csv, plan.yaml, report.md)")
    print(result.verdict)
    return result.exit_code
