"""The headline metrics of a ``records: summary`` run, from its aggregate tables only.

Why a second way to compute them: a summary run keeps no per-session, per-client or per-request
rows (that is what lets a month of any size fit), so the general computation in
``harness.runner.metrics`` would read empty tables and report zeros that look like results.
Here every metric is either exactly what the per-row tables would give, or NaN: a wrong number
is worse than a missing one.

Each aggregate counts by the rule its population follows (``harness.runner.metrics``), so a
window made of whole intervals gets exact numbers:

- ``arrivals`` counts clients by the interval they arrived in;
- ``intervals`` counts the sessions created in each interval with what became of them, and
  ``waits`` their waits' histograms by interval of creation;
- ``requests`` counts requests by the interval they were made in.

A window determines a population's metrics when no interval holding some of it straddles the
window's edges. Beyond that:

- ``billable_seconds`` is summed when sessions finish, so it is exact only when every session
  created in the window had finished by the end of the run;
- ``ledger_daily`` sums ledger rows per UTC day, exact for a window whose days holding usage
  rows are wholly inside or outside it;
- the pool's table (``utilization``) is the same at every level.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from harness.runner.tables import USAGE_KINDS, RunResult
from harness.runner.waits import WAIT_EDGES, quantile

__all__ = ["CAUSES", "summarize_aggregates", "window_wait_counts"]

_NAN = math.nan
_DAY = 86_400.0
_CREATE = "createSession"
#: Refusal cause → the error codes it covers, as a client's final outcome (``other``: every
#: code the others do not name). ``harness.runner.metrics`` says why they are told apart.
CAUSES: dict[str, tuple[str, ...]] = {
    "capacity": ("at_capacity",),
    "caps": ("concurrent_sessions",),
    "rate_limit": ("rate_limited",),
    "credits": ("insufficient_credits",),
    "other": (),
}


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


def _rows(
    table: pd.DataFrame, holding: pd.Series, length: float, window: tuple[float, float]
) -> tuple[pd.DataFrame, bool]:
    """The rows of ``table`` (one per interval and more) whose interval lies in ``window``, and
    whether that is exact: no interval that holds something (``holding``) straddles an edge."""
    inside, _ = _placement(table["t"].to_numpy(dtype=float), length, window)
    _, exact = _placement(table.loc[holding, "t"].to_numpy(dtype=float), length, window)
    return table[inside], exact


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


def window_wait_counts(
    result: RunResult, window: tuple[float, float] | None
) -> dict[str, np.ndarray[Any, Any]] | None:
    """The wait histograms (``harness.runner.waits``) of the sessions created in ``window``, summed
    from the ``waits`` table; ``None`` when the window cuts an interval that holds waits."""
    everything = (-math.inf, math.inf) if window is None else window
    waits = result.waits
    rows, exact = _rows(waits, waits["sessions"] > 0, _grid(result), everything)
    if not exact:
        return None
    edges = np.asarray(WAIT_EDGES)
    counts: dict[str, np.ndarray[Any, Any]] = {}
    for kind in ("placement", "first_frame"):
        chosen = rows[rows["kind"] == kind]
        values = np.zeros(len(edges), dtype=np.int64)
        index = np.searchsorted(edges, chosen["high"].to_numpy(dtype=float))
        np.add.at(values, index, chosen["sessions"].to_numpy(dtype=np.int64))
        counts[kind] = values
    return counts


def _client_metrics(result: RunResult, window: tuple[float, float]) -> dict[str, float]:
    arrivals = result.arrivals
    sessions = arrivals[arrivals["kind"] == "session"]
    rows, exact = _rows(sessions, sessions["clients"] > 0, _grid(result), window)
    outcome = rows["final_outcome"].astype(str)
    clients = float(rows["clients"].sum()) if exact else _NAN
    refused = rows[~outcome.isin(["ok", "replayed"])]
    metrics = {
        "session_clients": clients,
        "refused_clients": float(refused["clients"].sum()) if exact else _NAN,
    }
    known: list[str] = []
    for cause, codes in CAUSES.items():
        if not codes:
            continue
        count = float(rows.loc[outcome.isin(codes), "clients"].sum()) if exact else _NAN
        metrics[f"refused_{cause}"] = count
        metrics[f"refused_{cause}_rate"] = _ratio(count, clients)
        known += codes
    other = refused[~refused["final_outcome"].astype(str).isin(known)]
    count = float(other["clients"].sum()) if exact else _NAN
    metrics["refused_other"] = count
    metrics["refused_other_rate"] = _ratio(count, clients)
    return metrics


def _session_metrics(result: RunResult, window: tuple[float, float]) -> dict[str, float]:
    intervals = result.intervals
    rows, exact = _rows(intervals, intervals["sessions_created"] > 0, _grid(result), window)
    counts = window_wait_counts(result, window)
    if not exact or counts is None:
        names = (
            "sessions_created", "placed_sessions", "sessions_started", "waited_sessions",
            "no_capacity", "no_capacity_rate", "placement_wait_probability",
            "mean_placement_wait_seconds", "p95_placement_wait_seconds",
            "mean_first_frame_wait_seconds", "p95_first_frame_wait_seconds", "billable_seconds",
        )  # fmt: skip
        return dict.fromkeys(names, _NAN)
    created = float(rows["sessions_created"].sum())
    placed = float(rows["sessions_placed"].sum())
    started = float(rows["sessions_started"].sum())
    waited = float(rows["waited"].sum())
    no_capacity = float(rows["no_capacity"].sum())
    finished = sum(float(rows[f"sessions_{s}"].sum()) for s in ("ended", "failed", "canceled"))
    return {
        "sessions_created": created,
        "placed_sessions": placed,
        "sessions_started": started,
        "waited_sessions": waited,
        "no_capacity": no_capacity,
        "no_capacity_rate": _ratio(no_capacity, created),
        "placement_wait_probability": _ratio(waited, placed),
        "mean_placement_wait_seconds": _ratio(
            float(rows["placement_wait_seconds_sum"].sum()), placed
        ),
        "p95_placement_wait_seconds": quantile(counts["placement"], 0.95),
        "mean_first_frame_wait_seconds": _ratio(
            float(rows["first_frame_wait_seconds_sum"].sum()), started
        ),
        "p95_first_frame_wait_seconds": quantile(counts["first_frame"], 0.95),
        "billable_seconds": float(rows["billable_seconds"].sum()) if finished == created else _NAN,
    }


def _request_metrics(result: RunResult, window: tuple[float, float]) -> dict[str, float]:
    creates = result.requests[result.requests["operation"] == _CREATE]
    rows, exact = _rows(creates, creates["requests"] > 0, _grid(result), window)
    if not exact:
        names = (
            "first_attempts", "first_attempt_at_capacity", "first_attempt_at_capacity_rate",
            "at_capacity_refusals", "retried_calls",
        )  # fmt: skip
        return dict.fromkeys(names, _NAN)
    first = rows[rows["first_attempt"]]
    at_capacity = rows["outcome"] == "at_capacity"
    first_refused = float(first.loc[first["outcome"] == "at_capacity", "requests"].sum())
    first_count = float(first["requests"].sum())
    return {
        "first_attempts": first_count,
        "first_attempt_at_capacity": first_refused,
        "first_attempt_at_capacity_rate": _ratio(first_refused, first_count),
        "at_capacity_refusals": float(rows.loc[at_capacity, "requests"].sum()),
        "retried_calls": float(rows.loc[~rows["first_attempt"], "requests"].sum()),
    }


def summarize_aggregates(
    result: RunResult, window: tuple[float, float] | None = None
) -> dict[str, float]:
    """``harness.runner.metrics.summarize`` of a summary run: the same metrics, NaN for what
    its aggregates do not determine (see the module's docstring); ``mean_utilization`` is
    left to the caller (the pool's table is the same at every level)."""
    everything = (-math.inf, math.inf) if window is None else window
    metrics = _client_metrics(result, everything)
    metrics |= _session_metrics(result, everything)
    metrics |= _request_metrics(result, everything)
    metrics["credits_charged"] = _credits(result, window)
    return metrics
