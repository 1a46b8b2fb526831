"""``avatar-sim replay FILE --base-url URL --api-key KEY [--speed F] [--out DIR]``.

Plays the recording ``FILE`` (``harness.traffic.recording``) against the deployment and writes
to ``DIR``: ``comparison.csv`` (each metric observed beside its prediction, ``compare``),
``report.md``, ``recording.parquet`` (the traffic as played), ``predicted.csv`` (one row per
replication) and the observed ``sessions``, ``clients`` and ``api_calls`` tables as Parquet.
Prints the report and, last, a one-line verdict (agrees, disagrees naming the metrics, or
invalid when the deployment refused most creates, with the refusals by cause). Exit 0 when every
judged metric agrees with the prediction; 1 when one disagrees or most creates were refused (a
CI job can gate on it); 2 for a usage error, an unusable recording or scenario, or a deployment
that refuses the key or cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.cli import positive_number
from harness.scenarios import ScenarioError, load_scenario
from harness.traffic.recording import RecordingError, read_recording
from harness.traffic.replay import ReplayError, replay
from harness.traffic.replay_report import report_markdown

__all__ = ["add_arguments", "run"]

USAGE_ERROR = 2


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 2 replications")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", help="a capture, a CSV or Parquet file, a run's sessions")
    parser.add_argument("--base-url", required=True, help="the deployment, e.g. https://host")
    parser.add_argument(
        "--api-key",
        required=True,
        action="append",
        help="an unrestricted key; repeat for more keys of the same organization (round-robin)",
    )
    parser.add_argument(
        "--speed",
        type=positive_number,
        help="play this many times faster than recorded, in wall time (default: as recorded "
        "in the deployment's time, 1 / --time-factor)",
    )
    parser.add_argument(
        "--time-factor",
        type=positive_number,
        default=1.0,
        help="the deployment's wall seconds per second of its own time (avatar-sim serve's "
        "--time-factor; 1 for a real deployment)",
    )
    parser.add_argument(
        "--scenario",
        help="the configuration and client behaviour to predict with (and its first "
        "organization); serve the same file to compare with avatar-sim serve",
    )
    parser.add_argument(
        "--replications", type=_count, default=10, help="simulated runs of the prediction"
    )
    parser.add_argument("--seed", type=int, help="the first prediction's seed is this plus 1")
    parser.add_argument("--out", default="out/replay", help="directory for the results")
    parser.add_argument(
        "--poll",
        type=positive_number,
        default=0.25,
        help="wall seconds between asking after sessions",
    )
    parser.add_argument("--timeout", type=positive_number, default=30.0, help="seconds per request")


class _Progress:
    """The replay's progress on one line of standard error, each hundredth once."""

    def __init__(self) -> None:
        self.shown = -1

    def __call__(self, now: float, end: float) -> None:
        hundredth = int(100 * now / end) if end > 0 else 100
        if hundredth != self.shown:
            self.shown = hundredth
            text = f"\rreplayed {now:,.0f} of {end:,.0f} s of the deployment's time"
            print(text, end="", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        recording = read_recording(args.recording)
        base = None if args.scenario is None else load_scenario(args.scenario)
        out = Path(args.out)
        result = replay(
            recording,
            args.base_url,
            args.api_key,
            out=out,
            speed=args.speed,
            time_factor=args.time_factor,
            base=base,
            replications=args.replications,
            seed=args.seed,
            poll=args.poll,
            timeout=args.timeout,
            progress=_Progress(),
        )
    except (RecordingError, ScenarioError, ReplayError) as error:
        print(f"\navatar-sim replay: {error}", file=sys.stderr)
        return USAGE_ERROR
    print(file=sys.stderr)
    result.comparison.to_csv(out / "comparison.csv", index=False)
    result.predicted.to_csv(out / "predicted.csv", index=False)
    for name in ("sessions", "clients", "api_calls"):
        getattr(result.observed, name).to_parquet(out / f"{name}.parquet", index=False)
    report = report_markdown(result, args.base_url)
    (out / "report.md").write_text(report, encoding="utf-8")
    print(report, end="")
    print(f"written to {out}/")
    print(result.verdict)
    return result.exit_code
