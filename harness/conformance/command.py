"""``avatar-sim conformance``: hold a deployment to the contract profile.

Exit codes (those of every ``avatar-sim`` command): 0 the deployment conforms, 1 a check failed,
2 a usage error or a target that cannot be reached (or that refuses the given API key, which is a
usage error too: nothing could be checked, or that stopped answering), 3 nothing failed but a
check could not run for lack of input (a key, a run body, time); the report names the flag for
each, and ``--allow-incomplete`` turns 3 into 0.

Time: with ``--sim-admin-token`` (``avatar-sim serve`` only) the run moves the simulated clock;
otherwise it waits in real time, at the seed's shortest legal timers, each wait shown as it
happens (``--quick`` takes none, leaving the checks that need one incomplete). ``--time-factor``
is the target's wall seconds per second of its own time, for a served simulator on a fast clock.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from harness.conformance import runner
from harness.conformance.clock import QuickClock, RealClock, TargetClock, tqdm_display
from harness.conformance.inputs import Inputs
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
    parser.add_argument(
        "--model",
        action="append",
        help="a model to create runs with (<publisher>/<model>); repeatable: give one whose "
        "outputs include media for the asset checks",
    )
    parser.add_argument(
        "--run-json",
        metavar="JSON",
        action="append",
        help="the body of a run create (a JSON object): one for every --model, or one per "
        "--model in the same order",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="take no real-time wait: checks that need one are left incomplete (exit 3)",
    )
    parser.add_argument(
        "--time-factor",
        type=float,
        default=1.0,
        metavar="F",
        help="the target's wall seconds per second of its own time (avatar-sim serve "
        "--time-factor F runs its clock 1/F times faster; default 1)",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help="the longest single real-time wait, in wall seconds (default 180); a check that "
        "needs a longer one is left incomplete, naming the value that would let it run",
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 rather than 3 when nothing failed but some check could not run",
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
    parser.add_argument(
        "--timeout",
        type=float,
        default=20.0,
        help="wall seconds a request may take (default 20); a target that lets two requests "
        "time out is reported as stalled and the run stops (exit 2)",
    )


def run(args: argparse.Namespace) -> int:
    """The command's body; returns the exit code."""
    parts = urlsplit(args.base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        print(f"conformance: --base-url must be http(s)://host: {args.base_url!r}", file=sys.stderr)
        return USAGE_ERROR
    if args.max_examples < 0:
        print("conformance: --max-examples must be 0 or more", file=sys.stderr)
        return USAGE_ERROR
    for name, value in (("--time-factor", args.time_factor), ("--max-wait", args.max_wait),
                        ("--timeout", args.timeout)):  # fmt: skip
        if not value > 0 or value == float("inf"):
            print(f"conformance: {name} must be a positive number", file=sys.stderr)
            return USAGE_ERROR
    if args.quick and args.sim_admin_token:
        print("conformance: --quick and --sim-admin-token exclude each other", file=sys.stderr)
        return USAGE_ERROR
    unknown = sorted(set(args.check or ()) - set(runner.CHECKS))
    if unknown:
        print(f"conformance: no check named {', '.join(unknown)}", file=sys.stderr)
        return USAGE_ERROR
    try:
        models = tuple(args.model or ())
        bodies = tuple(_json_object(text, "--run-json") for text in args.run_json or ())
        if len(bodies) > 1 and len(bodies) != len(models):
            raise ValueError(
                f"give one --run-json for every --model, or one per --model ({len(models)} "
                f"--model, {len(bodies)} --run-json)"
            )
        inputs = Inputs(
            transport=_json_object(args.transport_json, "--transport-json"),
            avatar_id=args.avatar_id,
            models=models,
            run_bodies=bodies,
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
            say=say,
            clock=_clock(args),
        )
        report = runner.run(target, options)
    except TargetUnreachable as exc:
        print(f"conformance: cannot reach the target: {exc}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        target.close()
    print(report.summary())
    say(f"finished in {report.seconds:.0f} s")
    if args.junit:
        Path(args.junit).write_text(report.to_junit(), encoding="utf-8")
    if args.report:
        report.write(args.report)
    elif report.bodies:
        beside = Path(args.junit).resolve().parent if args.junit else Path.cwd()
        report.write_bodies(beside)
    return report.exit(allow_incomplete=args.allow_incomplete)


def say(message: str) -> None:
    print(f"conformance: {message}", file=sys.stderr, flush=True)


def _clock(args: argparse.Namespace) -> TargetClock | None:
    """The run's clock: the admin clock with the token (``None``: the runner's default), none
    with ``--quick``, else real waiting at the target's time factor, each wait shown."""
    if args.sim_admin_token:
        return None
    if args.quick:
        return QuickClock()
    return RealClock(factor=args.time_factor, display=tqdm_display(say))


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
