"""``avatar-sim run SCENARIO [--seed N] [--out DIR]``: one scenario, its tables and a summary.

Writes one Parquet file per table and ``summary.md`` to ``DIR`` and prints the summary. Exit 0 on
success, 2 when the scenario file is invalid (its problems are printed, one per field).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.runner import run_scenario
from harness.runner.metrics import summary_markdown
from harness.scenarios import ScenarioError, load_scenario

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", help="scenario YAML file (see scenarios/)")
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    parser.add_argument("--out", default="out/run", help="directory for Parquet + summary.md")


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    result = run_scenario(scenario, seed=args.seed)
    out = Path(args.out)
    result.write_parquet(out)
    summary = summary_markdown(result, scenario.window())
    (out / "summary.md").write_text(summary, encoding="utf-8")
    print(summary, end="")
    print(f"tables written to {out}/")
    return 0
