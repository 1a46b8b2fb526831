"""``avatar-sim conformance``: hold a deployment to the contract profile.

Exit codes (DESIGN.md): 0 the deployment conforms, 1 a check failed, 2 a usage error or a target
that cannot be reached (or that refuses the given API key, which is a usage error too: nothing
could be checked).
"""

from __future__ import annotations

import argparse
import sys
from urllib.parse import urlsplit

from harness.conformance import runner
from harness.conformance.target import Credentials, Target, TargetUnreachable

__all__ = ["add_arguments", "run"]

USAGE_ERROR = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", required=True, help="the deployment, e.g. https://host")
    parser.add_argument("--api-key", required=True, help="an unrestricted API key")
    parser.add_argument("--other-org-key", help="a key of another organization (AUTH-7)")
    parser.add_argument("--runs-read-key", help="a key limited to runs:read (AUTH-4, AUTH-5)")
    parser.add_argument("--runs-write-key", help="a key limited to runs:write (AUTH-4, AUTH-5)")
    parser.add_argument("--revoked-key", help="a revoked key (AUTH-3)")
    parser.add_argument(
        "--sim-admin-token", help="avatar-sim serve's admin token: lets the run move its clock"
    )
    parser.add_argument(
        "--max-examples",
        type=int,
        default=20,
        help="fuzzed cases per operation and mode (0: no fuzzing; default 20)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the fuzzer's seed (default 0)")
    parser.add_argument("--junit", metavar="PATH", help="write JUnit XML here")
    parser.add_argument("--report", metavar="PATH", help="write a report (.md Markdown, else JSON)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")


def run(args: argparse.Namespace) -> int:
    """The command's body; returns the exit code."""
    parts = urlsplit(args.base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        print(f"conformance: --base-url must be http(s)://host: {args.base_url!r}", file=sys.stderr)
        return USAGE_ERROR
    if args.max_examples < 0:
        print("conformance: --max-examples must be 0 or more", file=sys.stderr)
        return USAGE_ERROR
    credentials = Credentials(
        api=args.api_key,
        other_org=args.other_org_key,
        runs_read=args.runs_read_key,
        runs_write=args.runs_write_key,
        revoked=args.revoked_key,
        admin=args.sim_admin_token,
    )
    target = Target.remote(args.base_url, credentials, timeout=args.timeout)
    try:
        probe = target.request("GET", "/v1/models")
        if probe.status == 401:
            print(
                "conformance: the target refuses --api-key (GET /v1/models: 401)", file=sys.stderr
            )
            return USAGE_ERROR
        report = runner.run(
            target, runner.RunOptions(max_examples=args.max_examples, seed=args.seed)
        )
    except TargetUnreachable as exc:
        print(f"conformance: cannot reach the target: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        target.close()
    print(report.summary())
    if args.junit:
        with open(args.junit, "w", encoding="utf-8") as handle:
            handle.write(report.to_junit())
    if args.report:
        report.write(args.report)
    return report.exit_code
