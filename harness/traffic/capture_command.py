"""``avatar-sim capture --base-url URL --api-key KEY [--since T] [--until T] --out FILE``.

Writes the sessions of the key's organization as a recording (``harness.traffic.recording``):
Parquet, or CSV for a ``.csv`` name. Exit 0 when written, 2 for a usage error, a key the target
refuses, or a target that cannot be reached or keeps failing.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

import pandas as pd

from harness.cli import positive_number
from harness.target import Credentials, Target, TargetUnreachable
from harness.traffic.capture import PAGE_SIZE, CaptureError, CaptureReport, capture

__all__ = ["add_arguments", "run"]

USAGE_ERROR = 2


def _instant(text: str) -> datetime:
    try:
        stamp = pd.Timestamp(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO-8601 instant such as 2026-01-05T00:00:00Z"
        ) from None
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


def _page_size(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a page size from 1 to 1000")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base-url", required=True, help="the deployment, e.g. https://host")
    parser.add_argument("--api-key", required=True, help="an unrestricted key of the organization")
    parser.add_argument("--out", required=True, help="the recording to write (.parquet or .csv)")
    parser.add_argument(
        "--since", type=_instant, help="only sessions created at or after (ISO-8601; UTC if bare)"
    )
    parser.add_argument("--until", type=_instant, help="only sessions created at or before")
    parser.add_argument(
        "--org", help="the organization's label in the recording (default: key-<hash of the key>)"
    )
    parser.add_argument(
        "--page-size", type=_page_size, default=PAGE_SIZE, help="sessions asked per page"
    )
    parser.add_argument(
        "--time-factor",
        type=positive_number,
        default=1.0,
        help="the target's wall seconds per second of its own time (avatar-sim serve's "
        "--time-factor): scales every wait a refusal asks for",
    )
    parser.add_argument("--timeout", type=positive_number, default=30.0, help="seconds per request")


def _progress(report: CaptureReport) -> None:
    print(
        f"\rpages {report.pages}, sessions {report.rows_seen - report.repeated}, "
        f"refusals waited out {report.refusals}",
        end="",
        file=sys.stderr,
        flush=True,
    )


def run(args: argparse.Namespace) -> int:
    if args.since is not None and args.until is not None and args.until < args.since:
        print("avatar-sim capture: --until is before --since", file=sys.stderr)
        return USAGE_ERROR
    target = Target.url(args.base_url, Credentials(api=args.api_key), timeout=args.timeout)
    try:
        recording, report = capture(
            target,
            since=args.since,
            until=args.until,
            organization=args.org,
            page_size=args.page_size,
            time_factor=args.time_factor,
            progress=_progress,
        )
    except (CaptureError, TargetUnreachable) as error:
        print(f"\navatar-sim capture: {error}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        target.close()
    path = recording.write(args.out)
    print(file=sys.stderr)
    print(
        f"{len(recording)} sessions of {recording.info['organization']} "
        f"(plan {recording.info['plan']}) in {report.pages} pages, "
        f"{report.refusals} refusals waited out ({report.waited_seconds:.1f} s): {path}"
    )
    return 0
