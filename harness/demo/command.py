"""``avatar-sim demo``: a scripted day, then the default scenario with a report (the showcase).

Why it exists: it is the first real job the project does for a user, and the smoke test of the
whole stack. First the scripted day (``harness.demo.day``): its Markdown summary is printed and
written with the raw records (CSV and JSON) to ``--out``, the same ``--seed`` giving
byte-identical files. Then the default scenario (``scenarios/default.yaml``: a busy day for four
organizations with a capacity loss) runs through the HTTP facade, showing its progress, and
``report.md`` is written with PNG figures and the Parquet file of every table
(``harness.runner.report``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from harness.demo.day import run_demo
from harness.demo.summary import render_summary, write_outputs
from harness.examples import example
from harness.runner.binding import binding_limits
from harness.runner.metrics import summarize
from harness.runner.report import run_over_http, write_report
from harness.scenarios import ScenarioError, load_scenario

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play a short scripted day on an in-process simulator through the HTTP facade, then run "
        "a scenario (default: a busy day with a capacity loss) through it and write a report "
        "with figures and Parquet tables."
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/demo"),
        help="directory for report.md, figures/, tables/, summary.md and the raw records "
        "(default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted day (default 0)")
    parser.add_argument(
        "--scenario",
        type=Path,
        default=None,
        help="scenario file of the report (default: the packaged scenarios/default.yaml)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario or example("scenarios", "default.yaml"))
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    result = run_demo(args.seed)
    print(render_summary(result), end="")
    paths = write_outputs(result, args.out)
    print(f"\nWrote {', '.join(str(p) for p in paths)}\n")
    end = scenario.duration + scenario.cooldown
    with tqdm(
        total=round(end),
        desc=f"scenario {scenario.name}",
        unit="sim s",
        disable=args.no_progress,
        file=sys.stderr,
    ) as bar:
        outcome, requests = run_over_http(
            scenario, progress=lambda now: bar.update(round(now) - bar.n)
        )
    warnings = binding_limits(scenario, summarize(outcome, scenario.window()))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    written = write_report(
        outcome,
        scenario,
        args.out,
        requests=requests,
        scripted_day="summary.md",
        warnings=warnings,
        title="avatar-sim demo",
    )
    print(
        f"Scenario {scenario.name}: {len(outcome.sessions):,} sessions, {requests:,} HTTP requests"
    )
    print(f"Report: {written[0]} ({len(written) - 1} figures and tables beside it)")
    return 0
