"""``avatar-sim calibrate FILE --out calibrated.yaml [--scenario BASE] [--holdout 0.5]
[--step 1h] [--replications N]``.

Fits a capture (``harness.traffic.calibrate``) and writes, at ``--out``, a scenario overlay that
``run``, ``plan``, ``replay --scenario`` and ``serve --scenario`` take: extending ``--scenario``
when given (the deployment's configuration and clients), else a whole scenario. Beside it:
``<stem>.md`` (the fits with their KS distance, n and p, a Q-Q table of the start-up, the pool's
candidates) and, with ``--holdout``, ``<stem>.holdout.parquet``: the part of the capture the
service was not fitted to, for ``avatar-sim replay ... --scenario <out>``. Exit 0 once written;
2 for a usage error, an unusable recording or scenario, or a capture too small to fit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.scenarios import ScenarioError, load_scenario
from harness.scenarios.durations import parse_duration
from harness.scenarios.overlay import write_overlay
from harness.traffic.calibrate import Calibration, CalibrationError, calibrate
from harness.traffic.recording import RecordingError, read_recording

__all__ = ["add_arguments", "report", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recording", help="a capture, a CSV or Parquet file, a run's sessions")
    parser.add_argument("--out", required=True, help="the overlay to write (YAML)")
    parser.add_argument(
        "--scenario", help="the deployment's scenario the overlay extends (its configuration)"
    )
    parser.add_argument(
        "--holdout",
        type=float,
        default=0.0,
        help="the last share of the capture kept out of the service's fit, written beside the "
        "overlay for replay (e.g. 0.5)",
    )
    parser.add_argument("--step", default="1h", help="the arrival rate's coarsest step")
    parser.add_argument(
        "--replications", type=int, default=5, help="simulations per candidate pool size"
    )


def report(calibration: Calibration, out: Path) -> str:
    """The calibration's report: each fit with its quality, the pool's candidates, the notes."""
    startup, lengths, pool = calibration.startup, calibration.lengths, calibration.pool
    lines = [f"# Calibration of `{calibration.recording.source}`", "", f"Overlay: `{out.name}`."]
    profile = calibration.profile
    lines += [
        "",
        "## Arrivals",
        "",
        f"{len(calibration.recording):,} sessions over {profile.days} recorded "
        f"period{'s' if profile.days != 1 else ''}; {len(profile.pieces)} blocks of constant rate "
        f"(per step of {calibration.step / 3600:g} h, and within a step where the arrivals show "
        "one: Bayesian Blocks at a 5 % false-alarm rate), written as Poisson arrivals drawn from "
        "their uncertainty each run (`estimated_from_days`).",
        "",
        "## Start-up (started → first frame)",
        "",
        f"Lognormal: median {startup.median:.3f} s, sigma {startup.sigma:.3f}; "
        f"KS D = {startup.ks:.3f}, n = {startup.n}, p = {startup.p_value:.3f} (parametric "
        "bootstrap: the parameters come from the same sample).",
        "",
        "| quantile | observed (s) | fitted (s) | error |",
        "|---|---|---|---|",
    ]
    for row in calibration.startup_quantiles().to_dict("records"):
        error = (row["fitted"] - row["observed"]) / row["observed"]
        lines.append(
            f"| {row['quantile']:.2f} | {row['observed']:.3f} | {row['fitted']:.3f} | "
            f"{error:+.1%} |"
        )
    placement = calibration.placement
    lines += [
        "",
        f"Created → started (the wait for a worker): {placement['placed']:,.0f} placed, "
        f"{placement['waited_share']:.1%} waited, mean {placement['mean_seconds']:.2f} s, "
        f"95th percentile {placement['p95_seconds']:.2f} s.",
        "",
        "## Session lengths",
        "",
    ]
    if lengths is None:
        lines.append("Too few recorded lengths to fit (fewer than 10): the base's are kept.")
    else:
        lines.append(
            f"Lognormal: median {lengths.median:.1f} s, sigma {lengths.sigma:.3f}; KS D = "
            f"{lengths.ks:.3f}, n = {lengths.n}, p = {lengths.p_value:.3f}."
        )
    lines += ["", "## The pool", ""]
    if pool.workers is None:
        lines.append(f"Not identified: the capture shows no queueing (at least {pool.at_least}).")
    else:
        observed = ", ".join(f"{k} {v:,.1f}" for k, v in pool.observed.items())
        lines += [
            f"{pool.workers} workers: the size whose simulated queueing (the fitted part "
            "replayed exactly, with the fitted start-up) lies closest to what was observed "
            f"({observed}), in the simulations' own standard deviations; at least "
            f"{pool.at_least} were seen busy at once.",
            "",
            "| workers | distance | " + " | ".join(c for c in pool.candidates.columns[2:]) + " |",
            "|---" * len(pool.candidates.columns) + "|",
        ]
        for row in pool.candidates.to_dict("records"):
            cells = [str(row["workers"]), f"{row['distance']:.2f}"]
            cells += [f"{row[c]:,.1f}" for c in pool.candidates.columns[2:]]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## What a capture cannot show", ""]
    lines += [f"- {note}" for note in calibration.notes]
    return "\n".join(lines) + "\n"


def _header(calibration: Calibration) -> str:
    startup, pool = calibration.startup, calibration.pool
    said = [
        f"avatar-sim calibrate of {calibration.recording.source}",
        f"start-up: lognormal median {startup.median:.3f} s sigma {startup.sigma:.3f} "
        f"(KS D {startup.ks:.3f}, n {startup.n}, p {startup.p_value:.3f})",
        "pool: "
        + (f"{pool.workers} workers" if pool.workers else f"not shown (at least {pool.at_least})"),
        "the report beside this file says how each was fitted",
    ]
    return "\n".join(said)


def run(args: argparse.Namespace) -> int:
    try:
        recording = read_recording(args.recording)
        base = None if args.scenario is None else load_scenario(args.scenario)
        step = parse_duration(args.step)
        if args.replications < 2:
            raise CalibrationError("--replications: give at least 2")
        calibration = calibrate(
            recording, base, holdout=args.holdout, step=step, replications=args.replications
        )
    except (RecordingError, ScenarioError, CalibrationError, ValueError) as error:
        print(f"avatar-sim calibrate: {error}", file=sys.stderr)
        return 2
    out = Path(args.out)
    changes = calibration.overlay(base)
    extends = None if args.scenario is None else Path(args.scenario)
    write_overlay(out, changes, extends=extends, header=_header(calibration))
    written = [out, out.with_suffix(".md")]
    written[1].write_text(report(calibration, out), encoding="utf-8")
    if calibration.held_out is not None:
        written.append(calibration.held_out.write(out.with_suffix(".holdout.parquet")))
    startup = calibration.startup
    print(
        f"start-up: lognormal median {startup.median:.3f} s, sigma {startup.sigma:.3f} "
        f"(KS D = {startup.ks:.3f}, n = {startup.n}, p = {startup.p_value:.3f})"
    )
    pool = calibration.pool
    print(
        f"pool: {pool.workers} workers"
        if pool.workers is not None
        else f"pool: not shown by the capture (at least {pool.at_least} workers)"
    )
    print("written: " + ", ".join(str(p) for p in written))
    return 0
