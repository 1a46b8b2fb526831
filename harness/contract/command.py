"""``avatar-sim spec build|check|diff`` (also ``python -m harness spec …``): the contract tooling's
one command line.

- ``build``: write the derived files (``spec/schemas/``, ``spec/profile/``) from
  ``spec/openapi.yaml``; prints each derived path.
- ``check``: exit 1 when the contract is invalid, a gap is undecided or a derived file is stale.
- ``diff OLD NEW``: exit 1 when NEW breaks the additive-only rule against OLD (VER-1), one line
  per breaking change.

Exit codes: 0 success; 1 problems or breaking changes; 2 a usage error (argparse's own).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.contract import build_all, check, default_spec_dir, diff_specs

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``avatar-sim spec``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (
        ("build", "derive spec/schemas and the contract profile from spec/openapi.yaml"),
        ("check", "validate the contract and check that the derived files are up to date"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument(
            "--spec-dir", type=Path, default=None, help="contract directory (default: spec/)"
        )
    diff = actions.add_parser(
        "diff",
        help="flag changes between two contract versions that break the additive-only rule",
    )
    diff.add_argument("old", type=Path, help="the earlier openapi.yaml")
    diff.add_argument("new", type=Path, help="the later openapi.yaml")


def run(args: argparse.Namespace) -> int:
    """Run one ``spec`` action; 0 success, 1 problems or breaking changes."""
    action: str = args.action
    if action == "diff":
        breaking = diff_specs(args.old, args.new)
        for finding in breaking:
            print(finding)
        print(f"{len(breaking)} breaking change(s)" if breaking else "no breaking change")
        return 1 if breaking else 0
    directory: Path = args.spec_dir if args.spec_dir is not None else default_spec_dir()
    if action == "build":
        for path in build_all(directory):
            print(path)
        return 0
    problems = check(directory)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(problems)} problem(s)" if problems else "contract OK")
    return 1 if problems else 0
