"""``python -m harness.contract build|check|diff``: the contract tooling without the full CLI.

Exit codes: 0 success; 1 stale derived files, an invalid contract or a breaking change; 2 a usage
error (argparse's own).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.contract.build import build_all, check
from harness.contract.diff import diff_specs
from harness.contract.loader import default_spec_dir

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m harness.contract", description="Build, check or diff the contract."
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in (
        ("build", "write spec/schemas/*.json and the contract profile from spec/openapi.yaml"),
        ("check", "exit 1 if the contract is invalid or a derived file is stale"),
    ):
        action = actions.add_parser(name, help=text, description=text)
        action.add_argument("--spec-dir", type=Path, default=None, help="default: spec/")
    diff = actions.add_parser("diff", help="exit 1 if NEW breaks the additive-only rule")
    diff.add_argument("old", type=Path)
    diff.add_argument("new", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.action == "diff":
        findings = diff_specs(args.old, args.new)
        for finding in findings:
            print(finding)
        print(f"{len(findings)} breaking change(s)" if findings else "no breaking change")
        return 1 if findings else 0
    spec_dir: Path = args.spec_dir if args.spec_dir is not None else default_spec_dir()
    if args.action == "build":
        for path in build_all(spec_dir):
            print(path)
        return 0
    problems = check(spec_dir)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{len(problems)} problem(s)" if problems else "contract OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
