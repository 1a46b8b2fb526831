"""``avatar-sim examples DIR [--force] [--tests-only]``: copy the example files out of the package.

Writes ``DIR/scenarios``, ``DIR/sweeps`` and ``DIR/notebooks`` (the sweeps' relative ``base:``
paths keep working there) and the example test suite ``DIR/tests`` (``pytest DIR/tests``, or by
URL with ``--avatar-sim-serve`` or ``--avatar-sim-base-url``); ``--tests-only`` writes the suite
alone, for a project that wants a starting point for its own tests. Exit 0 on success, 2 when a
file already exists (``--force`` replaces it) or DIR cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.examples import copy_examples

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, help="where to copy the example files")
    parser.add_argument("--force", action="store_true", help="replace files that exist")
    parser.add_argument(
        "--tests-only", action="store_true", help="copy only the example test suite (DIR/tests)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        written = copy_examples(args.directory, overwrite=args.force, tests_only=args.tests_only)
    except (FileExistsError, OSError) as error:
        print(f"avatar-sim examples: {error}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    print(f"{len(written)} example files copied to {args.directory}")
    return 0
