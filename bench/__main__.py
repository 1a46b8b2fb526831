"""``make bench`` / ``python -m bench [--scale S] [--only NAME] [--json PATH] [--results DIR]``.

Prints the machine it runs on first (``bench.machine``: a wall time means nothing without it),
then runs every ``bench_*`` module of this package (or the named ones) and prints one JSON object
per benchmark. The whole report, dated, is written to ``DIR/<UTC date and time>.json``
(``bench/results/`` unless ``--results`` says otherwise; ``--results ''`` writes none), where a
run worth keeping is committed; ``--json`` writes it to a path of your choice as well. Last, on
standard error, one line per goal: what was measured, the goal and whether it was met.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path
from typing import Any

import bench
from bench.machine import describe

#: Where ``make bench`` keeps its dated reports.
RESULTS = Path(__file__).resolve().parent / "results"


def discover() -> list[str]:
    return sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="work multiplier (default 1.0)")
    parser.add_argument("--only", action="append", default=[], help="run only this benchmark")
    parser.add_argument("--json", type=Path, help="also write the report here")
    parser.add_argument(
        "--results",
        default=str(RESULTS),
        help="directory of the dated reports (default bench/results; '' writes none)",
    )
    args = parser.parse_args(argv)
    names = args.only or discover()
    unknown = sorted(set(names) - set(discover()))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; have {', '.join(discover())}")
    report: dict[str, Any] = {"machine": describe()}
    print(json.dumps(report), flush=True)
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        started = time.perf_counter()
        result = module.run(args.scale)
        result["wall_seconds"] = round(time.perf_counter() - started, 3)
        report[name] = result
        print(json.dumps({name: result}), flush=True)
    report["goals"] = verdicts(report)
    text = json.dumps(report, indent=2) + "\n"
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    if args.results:
        directory = Path(args.results)
        directory.mkdir(parents=True, exist_ok=True)
        stamp = report["machine"]["measured_at"].replace(":", "")
        (directory / f"{stamp}.json").write_text(text, encoding="utf-8")
    for line in report["goals"]:
        print(line, file=sys.stderr)
    return 0


def verdicts(report: dict[str, Any]) -> list[str]:
    """One line per goal a benchmark judged (its ``verdicts``), for a reader of ``make bench``:
    standard output stays one JSON object per line, so these go to standard error."""
    lines = []
    for name, result in report.items():
        for verdict in result.get("verdicts", ()):
            met = "met" if verdict["met"] else "NOT MET"
            lines.append(f"goal {met:7} {name}: {verdict['figure']} (goal {verdict['goal']})")
    return lines


if __name__ == "__main__":
    sys.exit(main())
