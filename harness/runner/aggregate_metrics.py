"""The headline metrics of a ``records: summary`` run, from its aggregate tables only.

Why a second way to compute them: a summary run keeps no per-session, per-client or per-request
rows (that is what lets a month of any size fit), so the general computation in
``harness.runner.metrics`` would read empty tables and report zeros that look like results.
Here every metric is either exactly what the per-row tables would give, or NaN: a wrong number
is worse than a missing one.

What the aggregates can and cannot say:

- ``arrivals`` counts clients by the interval they arrived in, so the client counts of a window
  are exact when no interval holding arrivals straddles the window's edges.
- ``intervals`` and ``requests`` count sessions and requests by the interval they happened in,
  not by their client's arrival; they give a window's session and request metrics only when
  the window holds every client (then every session and request is the window's).
- ``billable_seconds`` is summed when sessions finish, so it is exact only when no session is
  still live at the end of the run.
- ``waits`` is a histogram: the mean wait is exact (``intervals`` keeps the sums) but the 95th
  percentile is not kept, so it is NaN.
- ``utilization`` is kept whole at every level; ``ledger_daily`` sums ledger rows per UTC day,
  exact for a window whose days holding usage rows are wholly inside or outside it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from harness.collect import USAGE_KINDS, RunResult

__all__ = ["summarize_aggregates"]

_NAN = math.nan
_DAY = 86_400.0
_CREATE = "createSession"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else _NAN


def _grid(result: RunResult) -> float:
    """The length of the aggregates' intervals (one interval longer than the run: infinite)."""
    t = result.intervals["t"]
    return float(t.iloc[1] - t.iloc[0]) if len(t) >= 2 else math.inf


def _placement(
    starts: np.ndarray[tuple[int], np.dtype[np.float64]],
    length: float,
    window: tuple[float, float],
) -> tuple[np.ndarray[tuple[int], np.dtype[np.bool_]], bool]:
    """Which spans ``[start, start + length)`` lie inside ``window``, and whether none of them
    straddles its edges (then counting the inside ones is exact)."""
    low, high = window
    ends = starts + length
    inside = (starts >= low) & (ends <= high)
    outside = (ends <= low) | (starts >= high)
    return inside, bool((inside | outside).all())


def _credits(result: RunResult, window: tuple[float, float] | None) -> float:
    daily = result.ledger_daily
    usage = daily[daily["kind"].isin(USAGE_KINDS)]
    if window is None:
        return float(usage["credits"].sum())
    epoch = result.intervals["at"].iloc[0] - pd.Timedelta(
        seconds=float(result.intervals["t"].iloc[0])
    )
    days = pd.to_datetime(usage["day"]).dt.tz_localize("UTC")
    starts = ((days - epoch) / pd.Timedelta(seconds=1)).to_numpy(dtype=float)
    inside, exact = _placement(starts, _DAY, window)
    return float(usage["credits"].to_numpy()[inside].sum()) if exact else _NAN


def summarize_aggregates(
    result: RunResult, window: tuple[float, float] | None = None
) -> dict[str, float]:
    """``harness.runner.metrics.summarize`` of a summary run: the same metrics, NaN for what
    its aggregates do not determine (see the module's docstring)."""
    everything = (-math.inf, math.inf) if window is None else window
    arrivals = result.arrivals[result.arrivals["clients"] > 0]
    inside, exact = _placement(arrivals["t"].to_numpy(dtype=float), _grid(result), everything)
    sessions = arrivals[inside & (arrivals["kind"] == "session").to_numpy()]
    session_clients = float(sessions["clients"].sum()) if exact else _NAN
    refused = sessions[~sessions["final_outcome"].isin(["ok", "replayed"])]
    refused_clients = float(refused["clients"].sum()) if exact else _NAN
    metrics: dict[str, float] = {
        "session_clients": session_clients,
        "refused_clients": refused_clients,
        "refused_rate": _ratio(refused_clients, session_clients),
    }
    intervals = result.intervals
    created = float(intervals["sessions_created"].sum())
    placed = float(intervals["sessions_placed"].sum())
    waited = float(intervals["waited"].sum())
    no_capacity = float(intervals["no_capacity"].sum())
    creates = result.requests[result.requests["operation"] == _CREATE]
    first = creates[creates["first_attempt"]]
    first_refused = float(first.loc[first["outcome"] == "at_capacity", "requests"].sum())
    finished = sum(float(intervals[f"sessions_{s}"].sum()) for s in ("ended", "failed", "canceled"))
    by_session = {
        "sessions_created": created,
        "sessions_started": float(intervals["sessions_started"].sum()),
        "placed_sessions": placed,
        "waited_sessions": waited,
        "no_capacity": no_capacity,
        "no_capacity_rate": _ratio(no_capacity, created),
        "at_capacity_refusals": float(
            creates.loc[creates["outcome"] == "at_capacity", "requests"].sum()
        ),
        "first_attempts": float(first["requests"].sum()),
        "first_attempt_at_capacity": first_refused,
        "first_attempt_at_capacity_rate": _ratio(first_refused, float(first["requests"].sum())),
        "retried_calls": float(creates.loc[~creates["first_attempt"], "requests"].sum()),
        "mean_wait_seconds": _ratio(float(intervals["wait_seconds_sum"].sum()), placed),
        "p95_wait_seconds": _NAN,  # only the histogram of waits is kept
        "wait_probability": _ratio(waited, placed),
        "billable_seconds": (
            float(intervals["billable_seconds"].sum()) if finished == created else _NAN
        ),
    }
    whole = bool(inside.all()) and exact  # the window holds every client
    for name, value in by_session.items():
        metrics[name] = value if whole else _NAN
    metrics["p95_wait_seconds"] = _NAN
    utilization = result.utilization
    if window is not None:
        utilization = utilization[(utilization["t"] >= window[0]) & (utilization["t"] < window[1])]
    values = utilization["utilization"]
    metrics["mean_utilization"] = float(values.mean()) if values.notna().any() else _NAN
    metrics["credits_charged"] = _credits(result, window)
    return metrics
