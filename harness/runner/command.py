"""``avatar-sim run SCENARIO [--seed N] [--out DIR] [--no-figures]``: one scenario, its tables, a
summary and a report with figures.

Writes one Parquet file per table, ``summary.md`` and ``report.md`` (the demo's report: the
metrics with their window, the figures in ``figures/``, every scenario event marked) to ``DIR``
and prints the summary. A limit that held the load back from the pool (a concurrency cap, the
rate limit, credits) is said on standard error and in both files. Exit 0 on success, 2 when the
scenario file is invalid (its problems are printed, one per field).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.runner import run_scenario
from harness.runner.binding import binding_limits
from harness.runner.metrics import summarize, summary_markdown
from harness.scenarios import ScenarioError, load_scenario

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", help="scenario YAML file (see scenarios/)")
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    parser.add_argument(
        "--out", default="out/run", help="directory for Parquet, summary.md and report.md"
    )
    parser.add_argument(
        "--no-figures",
        dest="figures",
        action="store_false",
        help="skip report.md and its figures (tables and summary.md only)",
    )
    parser.add_argument(
        "--figures",
        dest="figures",
        action="store_true",
        help="write report.md with the demo's figures (the default)",
    )
    parser.set_defaults(figures=True)


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    result = run_scenario(scenario, seed=args.seed)
    window = scenario.window()
    warnings = binding_limits(scenario, summarize(result, window))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    out = Path(args.out)
    summary = summary_markdown(result, window, warnings=warnings)
    if args.figures:
        from harness.runner.report import write_report  # matplotlib, only when drawing

        written = write_report(result, scenario, out, warnings=warnings, tables="")
    else:
        result.write_parquet(out)
    (out / "summary.md").write_text(summary, encoding="utf-8")
    print(summary, end="")
    print(f"tables written to {out}/")
    if args.figures:
        print(f"report: {written[0]} (figures in {out / 'figures'}/)")
    return 0
