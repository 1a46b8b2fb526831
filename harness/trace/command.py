"""``avatar-sim trace PATH``: every requirement id with the passing tests that prove it.

Exits 0 on success, 1 with ``--strict`` when an id is unproven or unknown, 2 on unreadable input
(a missing results file says how to produce it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from harness.trace.catalog import CatalogError, load_catalog
from harness.trace.results import DEFAULT_SHOWN, ReportError, build_trace, read_report, render_trace

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``avatar-sim trace``."""
    parser.add_argument("results", type=Path, metavar="PATH", help="results file of --req-report")
    parser.add_argument(
        "--all", action="store_true", help="name every proving test instead of abbreviating"
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 if any id is unproven or unknown"
    )
    parser.add_argument(
        "--catalog", type=Path, default=None, help="requirement catalog (default: the project's)"
    )


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Print the trace table; 0 on success, 1 with ``--strict`` and a gap, 2 on unreadable input."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    results: Path = args.results
    catalog_file: Path | None = args.catalog
    try:
        catalog = load_catalog(catalog_file)
        report = read_report(results)
    except (CatalogError, ReportError) as exc:
        print(f"avatar-sim trace: {exc}", file=err)
        if isinstance(exc, ReportError) and not results.exists():
            print(f"  (produce it with: pytest --req-report {results})", file=err)
        return 2
    rows, unknown = build_trace(catalog, report)
    for requirement_id in unknown:
        print(f"warning: results name unknown requirement id {requirement_id!r}", file=err)
    shown = None if args.all else DEFAULT_SHOWN
    for line in render_trace(rows, shown=shown):
        print(line, file=out)
    if args.strict and (unknown or not all(row.proven for row in rows)):
        return 1
    return 0
