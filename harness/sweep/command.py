"""``avatar-sim sweep SWEEP [--replications N] [--workers N] [--dask ADDRESS] [--out DIR]``.

Runs on a local process pool (``--workers``, default: the CPU count) or, with ``--dask``, on the
Dask scheduler at ADDRESS. Writes ``runs.parquet`` (one row per replication), ``summary.parquet``
(mean and 95 % CI per point and metric) and ``summary.md``. A point where a concurrency cap, the
rate limit or credits refused clients before they reached the pool is warned about (standard
error and ``summary.md``): its metrics measure that limit, not the pool. Exit 2 on an invalid
file (every problem of the sweep, its scenario and its grid points at once).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from harness.gc_policy import collect_rarely
from harness.scenarios import ScenarioError
from harness.sweep.execute import DaskUnreachable, add_runner_arguments, connect_dask
from harness.sweep.model import load_sweep
from harness.sweep.run import point_warnings, run_sweep

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", help="sweep YAML file (see sweeps/)")
    parser.add_argument("--replications", type=int, default=None, help="override the file's")
    parser.add_argument("--out", default="out/sweep", help="directory for Parquet + summary.md")
    add_runner_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.replications is not None and args.replications < 1:
        print("--replications must be >= 1", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", FutureWarning)
            sweep, _base, points = load_sweep(args.sweep)
        client = None if args.dask is None else connect_dask(args.dask)
    except (ScenarioError, DaskUnreachable) as error:
        print(error, file=sys.stderr)
        return 2
    for note in notes:
        print(f"note: {note.message}", file=sys.stderr)
    try:
        result = run_sweep(
            sweep,
            points,
            replications=args.replications,
            workers=args.workers,
            dask_client=client,
            progress=not args.no_progress,
            setup=collect_rarely,  # in the worker processes this command starts
        )
    finally:
        if client is not None:
            client.close()
    limits = point_warnings(points, result.runs)
    for warning in limits:
        print(f"warning: {warning}", file=sys.stderr)
    out = Path(args.out)
    result.write(out)
    text = result.markdown(warnings=limits)
    (out / "summary.md").write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"tables written to {out}/")
    return 0
