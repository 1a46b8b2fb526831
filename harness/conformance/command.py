"""``avatar-sim conformance``: hold a deployment to the contract profile.

Exit codes (those of every ``avatar-sim`` command): 0 the deployment conforms, 1 a check failed,
2 a usage error or a target that cannot be reached (or that refuses the given API key, which is a
usage error too: nothing could be checked).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.conformance import runner
from harness.conformance.context import Inputs
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
        "--transport-json",
        metavar="JSON",
        help="the livekit transport to create sessions with, e.g. a real room's "
        '\'{"type": "livekit", "url": "wss://…", "room_name": "…", "worker_token": "…"}\'',
    )
    parser.add_argument("--avatar-id", help="a ready avatar to create sessions with")
    parser.add_argument("--model", help="the model to create runs with (<publisher>/<model>)")
    parser.add_argument(
        "--run-json", metavar="JSON", help="the body of a run create for --model (a JSON object)"
    )
    parser.add_argument(
        "--real-time",
        action="store_true",
        help="let time-dependent checks wait in real time (timers at their shortest legal "
        "values, the create rate window); each wait is shown",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="the longest single real-time wait (default 180); longer ones skip their check",
    )
    parser.add_argument(
        "--max-examples",
        type=int,
        default=20,
        help="fuzzed cases per operation and mode (0: no fuzzing; default 20)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the fuzzer's seed (default 0)")
    parser.add_argument(
        "--check",
        action="append",
        metavar="NAME",
        help="run only this check (repeatable; default: every check)",
    )
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
    unknown = sorted(set(args.check or ()) - set(runner.CHECKS))
    if unknown:
        print(f"conformance: no check named {', '.join(unknown)}", file=sys.stderr)
        return USAGE_ERROR
    try:
        inputs = Inputs(
            transport=_json_object(args.transport_json, "--transport-json"),
            avatar_id=args.avatar_id,
            model=args.model,
            run_body=_json_object(args.run_json, "--run-json"),
            real_time=args.real_time,
            max_wait_seconds=args.max_wait,
        )
    except ValueError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
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
        options = runner.RunOptions(
            max_examples=args.max_examples,
            seed=args.seed,
            inputs=inputs,
            only=frozenset(args.check) if args.check else None,
            say=lambda message: print(f"conformance: {message}", file=sys.stderr, flush=True),
        )
        report = runner.run(target, options)
    except TargetUnreachable as exc:
        print(f"conformance: cannot reach the target: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        target.close()
    print(report.summary())
    if args.junit:
        Path(args.junit).write_text(report.to_junit(), encoding="utf-8")
    if args.report:
        report.write(args.report)
    elif report.bodies:
        beside = Path(args.junit).resolve().parent if args.junit else Path.cwd()
        report.write_bodies(beside)
    return report.exit_code


def _json_object(text: str | None, option: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{option} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{option} must be a JSON object")
    return value
