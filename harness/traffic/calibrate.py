"""``calibrate``: the service's parameters fitted to a capture, as a scenario overlay (PLAN-14).

Why: the simulator's service times are the seed's defaults, not the deployment's; a plan of the
deployment is only as good as that match (a simulator of model serving reports a few percent of
error against real serving once calibrated to the engine as it runs, and its users' first wish
is that calibration). What a capture holds, and what it is fitted to:

- **arrivals**: the rate over the day (``harness.traffic.fit``: per step, and per block within a
  step where the arrivals show one), from the whole capture, written as Poisson arrivals that
  say how many recorded days they rest on (``estimated_from_days``: each run draws its rates
  from their uncertainty);
- **session lengths**: a lognormal fitted to the recorded lengths (billable seconds from the
  first frame, whole seconds), with its Kolmogorov-Smirnov distance, n and parametric-bootstrap
  p-value;
- **start-up**: created → started is the wait for a worker (queueing, what the pool explains);
  started → first frame is the worker's boot and the first frame's latency, of which a capture
  sees only the sum: a lognormal is fitted to it (KS, n, p) and written as ``worker_boot``, with
  ``first_frame_latency`` 0, so that the simulated start-up has the fitted distribution;
- **the pool**: when the capture shows queueing (a session waited for a worker) or
  ``no_capacity``, the pool size that best explains it: the fitted part replayed in the
  simulator exactly as recorded, with the fitted start-up, ``replications`` times per candidate
  size, and the size whose simulated waits and failures lie closest to the observed ones in
  their own standard deviations (a simulated method of moments: D. McFadden, Econometrica 57
  (1989) 995-1026) is chosen. Without queueing the capture shows only a lower bound (the most
  sessions seen on workers at once), and no size is written.

With ``holdout`` the service (start-up, pool) is fitted to the capture's first part only and the
rest is written beside the overlay, for ``avatar-sim replay`` to play against the deployment
with ``--scenario`` the overlay: its fidelity errors then measure the calibration on traffic it
was not fitted to (the demand is fitted to the whole capture: the replay plays the held-out
traffic's own arrivals, so the demand's fit does not enter that check).

What a capture cannot show, said in the report: refused creates (a capture lists sessions), the
limits of other keys, and which part of start-up is boot and which the first frame.
"""

from __future__ import annotations

import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.runner import run_scenario
from harness.runner.metrics import summarize
from harness.scenarios import Scenario, parse_scenario
from harness.scenarios.overlay import merge
from harness.traffic.fit import LogNormalFit, RateProfile, fit_lognormal
from harness.traffic.fresh import fitted_profile, observed_seconds
from harness.traffic.recording import Recording

__all__ = ["Calibration", "CalibrationError", "PoolFit", "calibrate", "split"]

#: A wait at most this long is none: a capture's instants keep milliseconds.
_NO_WAIT = 0.0015
#: The statistics the pool size is fitted on: what queueing changes.
POOL_STATISTICS = ("waited_sessions", "no_capacity", "placement_wait_total")
_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


class CalibrationError(ValueError):
    """A capture that cannot be calibrated from (too few sessions, no start-ups)."""


@dataclass(frozen=True)
class PoolFit:
    """The pool size found (``workers``; ``None`` when the capture shows no queueing), the
    least it can be (``at_least``: the most sessions seen on workers at once), each candidate's
    simulated statistics and distance (``candidates``), and what was observed."""

    workers: int | None
    at_least: int
    observed: dict[str, float]
    candidates: pd.DataFrame


@dataclass
class Calibration:
    """What ``calibrate`` fitted; ``overlay()`` is the scenario overlay it writes."""

    recording: Recording
    fitted_part: Recording
    held_out: Recording | None
    profile: RateProfile
    step: float
    lengths: LogNormalFit | None
    startup: LogNormalFit
    startup_sample: np.ndarray
    placement: dict[str, float]
    pool: PoolFit
    notes: list[str] = field(default_factory=list)

    def startup_quantiles(self) -> pd.DataFrame:
        """Observed against fitted start-up quantiles (a Q-Q table)."""
        rows = [
            {
                "quantile": q,
                "observed": float(np.quantile(self.startup_sample, q)),
                "fitted": self.startup.quantile(q),
            }
            for q in _QUANTILES
        ]
        return pd.DataFrame(rows)

    def arrivals(self, duration: float) -> list[dict[str, Any]]:
        """The fitted rate as Poisson arrivals, each block of each recorded period once."""
        period = self.profile.length if self.profile.days == 1 else 86_400.0
        pieces = []
        day = 0
        while day * period < duration:
            for piece in self.profile.pieces:
                start, end = day * period + piece.start, min(day * period + piece.end, duration)
                if end > start and piece.rate > 0:
                    pieces.append(
                        {"kind": "poisson", "rate_per_hour": round(piece.rate * 3600, 6),
                         "start": start, "end": end, "estimated_from_days": self.profile.days}
                    )  # fmt: skip
            day += 1
        return pieces

    def overlay(self, base: Scenario | None) -> dict[str, Any]:
        """The scenario changes: arrivals, session lengths, start-up and (when identified) the
        pool; without a base, a whole scenario around them."""
        observed = observed_seconds(self.recording)
        duration = observed if base is None else base.duration
        scheduler: dict[str, Any] = {
            "worker_boot": {"kind": "lognormal", "median": round(self.startup.median, 6),
                            "sigma": round(self.startup.sigma, 6)},
            "first_frame_latency": {"kind": "constant", "value": 0.0},
        }  # fmt: skip
        if self.pool.workers is not None:
            scheduler["workers"] = self.pool.workers
        changes: dict[str, Any] = {"arrivals": self.arrivals(duration)}
        if self.lengths is not None:
            changes["sessions"] = {
                "length": {"kind": "lognormal", "median": round(self.lengths.median, 6),
                           "sigma": round(self.lengths.sigma, 6)}
            }  # fmt: skip
        changes["config"] = {"scheduler": scheduler}
        if base is not None:
            return changes
        label = self.recording.info.get("organization") or "captured"
        plan = self.recording.info.get("plan") or "enterprise"
        whole: dict[str, Any] = {
            "name": "calibrated",
            "description": f"fitted to {self.recording.source}",
            "duration": math.ceil(duration / 60) * 60,
            "cooldown": "30m",
            "limits": {"concurrency": "off"},
            "organizations": [{"name": str(label), "plan": str(plan)}],
        }
        return merge(whole, changes)  # type: ignore[no-any-return]


def split(recording: Recording, holdout: float) -> tuple[Recording, Recording | None]:
    """``recording`` cut in time: the first ``1 - holdout`` of what it watched, and the rest
    with offsets from the cut (``None`` without a hold-out)."""
    if holdout <= 0:
        return recording, None
    cut = (1.0 - holdout) * observed_seconds(recording)
    frame = recording.frame
    first = frame[frame["offset_seconds"] < cut].reset_index(drop=True)
    rest = frame[frame["offset_seconds"] >= cut].copy()
    rest["offset_seconds"] = rest["offset_seconds"] - cut
    start = None if recording.start is None else recording.start + pd.Timedelta(seconds=cut)
    info = {k: v for k, v in recording.info.items() if k != "until"}
    return (
        Recording(first, recording.source, recording.start, info),
        Recording(rest.reset_index(drop=True), f"{recording.source} (held out)", start, info),
    )


def _seconds_between(frame: pd.DataFrame, start: str, end: str) -> pd.Series:
    return (frame[end] - frame[start]).dt.total_seconds().dropna()


def _observed_pool(frame: pd.DataFrame) -> tuple[dict[str, float], int]:
    """The fitted part's queueing statistics, and the fewest workers that can have held its
    sessions: the most sessions surely on workers at once (a worker holds a session from
    ``started_at`` to at least ``billable_seconds - 1`` after its first frame, since billing
    rounds up; the drain, which a capture does not show, is left out, and the instants keep
    milliseconds), a lower bound of the pool."""
    waits = _seconds_between(frame, "created_at", "started_at")
    statistics_ = {
        "waited_sessions": float((waits > _NO_WAIT).sum()),
        "no_capacity": float((frame["error_code"].astype(str) == "no_capacity").sum()),
        "placement_wait_total": float(waits[waits > _NO_WAIT].sum()),
    }
    held = frame.dropna(subset=["started_at", "first_frame_at"])
    starts = (held["started_at"] - held["created_at"]).dt.total_seconds() + held["offset_seconds"]
    ran = (held["first_frame_at"] - held["started_at"]).dt.total_seconds()
    billed = (held["billable_seconds"].fillna(0.0) - 1.0).clip(lower=0.0)
    starts, ends = starts + 0.002, starts + ran + billed - 0.002
    events = sorted([(t, 1) for t in starts] + [(t, -1) for t in ends])
    busy = most = 0
    for _t, delta in events:
        busy += delta
        most = max(most, busy)
    return statistics_, most


def _simulated_pool(scenario: Scenario, workers: int, replications: int) -> dict[str, list[float]]:
    config = dict(scenario.config)
    config["scheduler"] = {**config.get("scheduler", {}), "workers": workers}
    trial = scenario.model_copy(update={"config": config, "records": "sessions"})
    found: dict[str, list[float]] = {name: [] for name in POOL_STATISTICS}
    for replication in range(replications):
        result = run_scenario(trial, seed=scenario.seed + 1 + replication)
        metrics = summarize(result, (0.0, scenario.duration))
        found["waited_sessions"].append(metrics["waited_sessions"])
        found["no_capacity"].append(metrics["no_capacity"])
        placed = metrics["placed_sessions"]
        mean = metrics["mean_placement_wait_seconds"]
        found["placement_wait_total"].append(0.0 if math.isnan(mean) else mean * placed)
    return found


def _distance(observed: dict[str, float], simulated: dict[str, list[float]]) -> float:
    """Σ (observed - mean)² / (variance + 1) over the pool's statistics: how many of their
    own (squared) standard deviations the observed values lie from a candidate's."""
    total = 0.0
    for name in POOL_STATISTICS:
        values = simulated[name]
        mean = statistics.fmean(values)
        spread = statistics.variance(values) if len(values) > 1 else 0.0
        total += (observed[name] - mean) ** 2 / (spread + 1.0)
    return total


def fit_pool(fitted: Recording, base: Scenario, replications: int) -> PoolFit:
    """The pool size that best explains the fitted part's queueing (see the module): each
    size from the least that can have held the sessions up, until three in a row lie further
    than the best."""
    observed, most = _observed_pool(fitted.frame)
    rows: list[dict[str, Any]] = []
    if observed["waited_sessions"] == 0 and observed["no_capacity"] == 0:
        return PoolFit(None, most, observed, pd.DataFrame(rows))
    with tempfile.TemporaryDirectory(prefix="calibrate-") as folder:
        path = fitted.write(Path(folder) / "fitted.parquet")
        data = base.model_dump(mode="json")
        first = data["organizations"][0]["name"]  # a capture is one key's organization
        data["arrivals"] = [
            {"kind": "recorded", "path": str(path), "demand": "exact", "organization": first}
        ]
        data.update(warmup=0.0, measure=None, runs=[], faults=[], pool_schedule=[])
        data["duration"] = max(observed_seconds(fitted), 60.0)
        scenario = parse_scenario(data, "the calibration's replay of the capture")
        best: tuple[float, int] | None = None
        size = max(1, most)
        worse = 0
        while worse < 3 and size <= max(4 * most, most + 20):
            simulated = _simulated_pool(scenario, size, replications)
            distance = _distance(observed, simulated)
            means = {f"{k}_mean": statistics.fmean(v) for k, v in simulated.items()}
            rows.append({"workers": size, "distance": distance, **means})
            if best is None or distance < best[0]:
                best, worse = (distance, size), 0
            else:
                worse += 1
            size += 1
    assert best is not None
    return PoolFit(best[1], most, observed, pd.DataFrame(rows))


def calibrate(
    recording: Recording,
    base: Scenario | None = None,
    *,
    holdout: float = 0.0,
    step: float = 3600.0,
    replications: int = 5,
) -> Calibration:
    """Fit ``recording`` (see the module): the service on its first ``1 - holdout``, the
    demand on all of it, the pool against ``base`` (the deployment's configuration and
    clients; without one, the service's defaults with the concurrency caps lifted)."""
    if not 0 <= holdout < 1:
        raise CalibrationError("the hold-out must be a share in [0, 1)")
    fitted, held_out = split(recording, holdout)
    frame = fitted.frame
    startup = _seconds_between(frame, "started_at", "first_frame_at")
    startup = startup[startup > 0]
    if len(startup) < 10:
        raise CalibrationError(
            f"{recording.source}: {len(startup)} sessions with both started_at and "
            "first_frame_at in the fitted part; at least 10 are needed to fit the start-up"
        )
    startup_fit = fit_lognormal(startup.tolist())
    lengths = recording.frame["length_seconds"].dropna()
    lengths_fit = fit_lognormal(lengths.tolist()) if (lengths > 0).sum() >= 10 else None
    waits = _seconds_between(frame, "created_at", "started_at")
    placement = {
        "placed": float(len(waits)),
        "waited_share": float((waits > _NO_WAIT).mean()) if len(waits) else math.nan,
        "mean_seconds": float(waits.mean()) if len(waits) else math.nan,
        "p95_seconds": float(waits.quantile(0.95)) if len(waits) else math.nan,
    }
    calibration = Calibration(
        recording, fitted, held_out, fitted_profile(recording, step=step), step, lengths_fit,
        startup_fit, startup.to_numpy(), placement,
        PoolFit(None, 0, {}, pd.DataFrame()),
    )  # fmt: skip
    calibration.pool = fit_pool(fitted, _trial_base(calibration, base), replications)
    calibration.notes += _notes(calibration)
    return calibration


def _trial_base(calibration: Calibration, base: Scenario | None) -> Scenario:
    """The scenario the pool is fitted in: the base (or the standalone overlay) with the
    fitted start-up and lengths."""
    changes = calibration.overlay(base)
    changes.pop("extends", None)
    data = merge(base.model_dump(mode="json") if base is not None else {}, changes)
    return parse_scenario(data, "the calibrated scenario")


def _notes(calibration: Calibration) -> list[str]:
    notes = [
        "a capture lists sessions, not refused creates: what the deployment refused before "
        "creating a session (rate limits, caps, a full queue) is not in it",
        "started → first frame is the boot and the first frame's latency together (a capture "
        "sees only their sum): the fit is written as worker_boot, first_frame_latency 0",
    ]
    pool = calibration.pool
    if pool.workers is None:
        notes.append(
            f"the capture shows no queueing: the pool is at least {pool.at_least} workers (the "
            "most sessions seen on workers at once), and no size is written"
        )
    return notes
