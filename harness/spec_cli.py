"""``avatar-sim spec build|check|diff``: the command-line face of ``harness.contract``.

Why a separate module: the CLI must work (and say something useful) before and without the
contract tooling, so ``harness.contract`` is imported only when a ``spec`` action runs; if it is
not there, the command says so and exits 2 instead of failing every other command.

The functions it calls, and how their results are read:

- ``contract.build_all(spec_dir)``: writes the derived files (``schemas/``, ``profile/``); an
  iterable result is printed one item per line.
- ``contract.check(spec_dir)``: the problems found (an iterable; empty means the contract is
  valid and the derived files are current). Exit 1 if any.
- ``contract.diff_specs(old, new)``: the changes that break the additive-only rule (VER-1), an
  iterable; exit 1 if any.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from harness.requirements import spec_dir

__all__ = ["add_arguments", "run"]

CONTRACT_MODULE = "harness.contract"


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


def _contract() -> ModuleType | None:
    try:
        return importlib.import_module(CONTRACT_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != CONTRACT_MODULE:
            raise
        return None


def _lines(result: object) -> list[str]:
    if result is None or isinstance(result, str | bytes):
        return [] if not result else [str(result)]
    if isinstance(result, Iterable):
        return [str(item) for item in result]
    return [str(result)]


def run(args: argparse.Namespace) -> int:
    """Run one ``spec`` action; 0 success, 1 problems or breaking changes, 2 tooling missing."""
    contract = _contract()
    if contract is None:
        print(
            f"avatar-sim spec: the contract tooling ({CONTRACT_MODULE}) is not available",
            file=sys.stderr,
        )
        return 2
    action: str = args.action
    if action == "diff":
        breaking = _lines(contract.diff_specs(args.old, args.new))
        for line in breaking:
            print(line)
        print(f"{len(breaking)} breaking change(s)" if breaking else "no breaking change")
        return 1 if breaking else 0
    directory: Path = args.spec_dir if args.spec_dir is not None else spec_dir()
    if action == "build":
        for line in _lines(contract.build_all(directory)):
            print(line)
        return 0
    problems = _lines(contract.check(directory))
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{len(problems)} problem(s)" if problems else "contract OK")
    return 1 if problems else 0
