"""The headline numbers of one run, computed from its tables only, within a measurement window.

Why from the tables: a sweep aggregates these over replications, and a notebook can recompute
any of them from the Parquet files; nothing here looks at the simulator.

Why a window: a queue starts empty, so the first minutes of a run are not its steady state. The
scenario's ``warmup`` and ``measure`` give the window of *arrival* times that counts: a session,
its API calls and its wait belong to the window its client arrived in; pool samples and ledger
rows count by their own time.

Every metric declares its kind, because the kind decides how a sweep builds its interval and
how a summary prints it: a proportion knows its numerator and denominator (both metrics too),
so replications can be pooled into one binomial interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from harness.collect import USAGE_KINDS, RunResult
from harness.runner.aggregate_metrics import summarize_aggregates

__all__ = [
    "METRICS",
    "USAGE_KINDS",
    "Metric",
    "format_value",
    "summarize",
    "summary_markdown",
]

Kind = Literal["count", "proportion", "fraction", "seconds", "credits"]


@dataclass(frozen=True, slots=True)
class Metric:
    """What a metric measures, its kind, its range and (for proportions) what it divides."""

    description: str
    kind: Kind
    numerator: str | None = None
    denominator: str | None = None
    whole: bool = False  # a whole number whatever its kind (billable seconds are integers)

    @property
    def bounds(self) -> tuple[float, float]:
        """The range the metric (and any interval of it) lies in."""
        if self.kind in ("proportion", "fraction"):
            return 0.0, 1.0
        return 0.0, math.inf

    @property
    def unit(self) -> str:
        return {"seconds": "s", "credits": "credits"}.get(self.kind, "")


def _share(description: str, numerator: str, denominator: str) -> Metric:
    return Metric(description, "proportion", numerator, denominator)


#: Metric name → what it measures (the sweep's columns, the summary's lines).
METRICS: dict[str, Metric] = {
    "session_clients": Metric("clients that wanted a session", "count"),
    "sessions_created": Metric("sessions the service accepted", "count"),
    "sessions_started": Metric("sessions that reached their first frame", "count"),
    "placed_sessions": Metric("sessions a worker took (started_at set)", "count"),
    "waited_sessions": Metric("placed sessions that waited for a worker at all", "count"),
    "no_capacity": Metric("sessions failed with no_capacity (start-up timeout)", "count"),
    "no_capacity_rate": _share("no_capacity / sessions created", "no_capacity", "sessions_created"),
    "at_capacity_refusals": Metric("create attempts refused with 503 at_capacity", "count"),
    "first_attempts": Metric("first create attempts", "count"),
    "first_attempt_at_capacity": Metric("first create attempts refused at_capacity", "count"),
    "first_attempt_at_capacity_rate": _share(
        "first create attempts refused at_capacity / first attempts",
        "first_attempt_at_capacity",
        "first_attempts",
    ),
    "refused_clients": Metric("session clients that never got a session", "count"),
    "refused_rate": _share(
        "session clients that never got a session / session clients",
        "refused_clients",
        "session_clients",
    ),
    "retried_calls": Metric("create attempts after the first", "count"),
    "mean_wait_seconds": Metric(
        "mean start-up wait (started_at - created_at) of placed sessions", "seconds"
    ),
    "p95_wait_seconds": Metric("95th percentile of that wait", "seconds"),
    "wait_probability": _share(
        "placed sessions that waited at all / placed sessions", "waited_sessions", "placed_sessions"
    ),
    "mean_utilization": Metric("mean busy / capacity over the samples", "fraction"),
    "billable_seconds": Metric("billable seconds of every session", "seconds", whole=True),
    "credits_charged": Metric("credits charged (ledger usage rows)", "credits"),
}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def _within(times: pd.Series, window: tuple[float, float] | None) -> pd.Series:
    if window is None:
        return pd.Series(True, index=times.index)
    start, end = window
    return (times >= start) & (times < end)


def summarize(result: RunResult, window: tuple[float, float] | None = None) -> dict[str, float]:
    """Every metric of ``METRICS`` for one run (NaN when undefined, e.g. no sessions), counting
    the clients that arrived within ``window`` (simulated seconds ``[start, end)``; default:
    every client) and the samples and ledger rows of that window.

    A ``records: summary`` run has no per-row tables: its metrics come from the aggregates,
    NaN where those do not determine them (``harness.runner.aggregate_metrics``)."""
    if result.records == "summary":
        values = summarize_aggregates(result, window)
        return {name: values[name] for name in METRICS}
    clients = result.clients
    arrived = clients[_within(clients["t"], window)]
    members = set(arrived["client"].tolist())
    session_clients = arrived[arrived["kind"] == "session"]
    sessions = result.sessions[result.sessions["client"].isin(members)]
    calls = result.api_calls[result.api_calls["client"].isin(members)]
    creates = calls[calls["operation"] == "createSession"]
    placed = sessions[sessions["started_at"].notna()]
    wait = placed["wait_seconds"]
    first = creates[creates["attempt"] == 1]
    first_refused = float((first["outcome"] == "at_capacity").sum())
    no_capacity = float((sessions["error_code"] == "no_capacity").sum())
    refused = float((~session_clients["final_outcome"].isin(["ok", "replayed"])).sum())
    waited = float((wait > 1e-9).sum())
    ledger = result.ledger[_within(result.ledger["t"], window)]
    usage_rows = ledger[ledger["kind"].isin(USAGE_KINDS)]
    utilization = result.utilization[_within(result.utilization["t"], window)]["utilization"]
    return {
        "session_clients": float(len(session_clients)),
        "sessions_created": float(len(sessions)),
        "sessions_started": float(sessions["first_frame_at"].notna().sum()),
        "placed_sessions": float(len(placed)),
        "waited_sessions": waited,
        "no_capacity": no_capacity,
        "no_capacity_rate": _ratio(no_capacity, len(sessions)),
        "at_capacity_refusals": float((creates["outcome"] == "at_capacity").sum()),
        "first_attempts": float(len(first)),
        "first_attempt_at_capacity": first_refused,
        "first_attempt_at_capacity_rate": _ratio(first_refused, len(first)),
        "refused_clients": refused,
        "refused_rate": _ratio(refused, len(session_clients)),
        "retried_calls": float(creates["retried"].sum()),
        "mean_wait_seconds": float(wait.mean()) if len(wait) else math.nan,
        "p95_wait_seconds": float(wait.quantile(0.95)) if len(wait) else math.nan,
        "wait_probability": _ratio(waited, len(wait)),
        "mean_utilization": float(utilization.mean()) if utilization.notna().any() else math.nan,
        "billable_seconds": float(sessions["billable_seconds"].sum()),
        "credits_charged": float(usage_rows["credits"].sum()),
    }


def format_value(metric: str, value: float) -> str:
    """One way to print a metric's value everywhere (summaries, sweeps, reports): counts and
    credits as whole numbers with thousands separators, proportions and fractions with four
    decimals, seconds with two; ``n/a`` when undefined."""
    if math.isnan(value):
        return "n/a"
    spec = METRICS.get(metric)
    kind = spec.kind if spec is not None else "seconds"
    if kind in ("count", "credits") or (spec is not None and spec.whole):
        return f"{value:,.0f}"
    if kind in ("proportion", "fraction"):
        return f"{value:.4f}"
    return f"{value:,.2f}"


def summary_markdown(result: RunResult, window: tuple[float, float] | None = None) -> str:
    """A short Markdown report: the metrics, then sessions by final status and refusals."""
    metrics = summarize(result, window)
    lines = [f"# Scenario `{result.scenario}` (seed {result.seed})", ""]
    lines += [f"Simulated {result.duration / 3600:.2f} h."]
    if window is not None:
        lines += [f"Metrics count the clients that arrived in [{window[0]:g} s, {window[1]:g} s)."]
    lines += ["", "| metric | value | unit |", "|---|---|---|"]
    for name, value in metrics.items():
        lines.append(f"| {name} | {format_value(name, value)} | {METRICS[name].unit} |")
    lines += ["", "## Sessions by final status", "", "| status | sessions |", "|---|---|"]
    for status, count in _statuses(result).items():
        lines.append(f"| {status} | {count:,} |")
    lines += ["", "## Refused requests", "", "| operation | code | count |", "|---|---|---|"]
    requests = result.requests[~result.requests["outcome"].isin(["ok", "replayed"])]
    counts = requests.groupby(["operation", "outcome"])["requests"].sum().reset_index()
    for row in counts.itertuples(index=False):
        lines.append(f"| {row.operation} | {row.outcome} | {row.requests:,} |")
    return "\n".join(lines) + "\n"


def _statuses(result: RunResult) -> dict[str, int]:
    """Sessions by status at the end of the run; a summary run knows the finished ones by their
    final status and counts the others together."""
    if result.records != "summary":
        counts = result.sessions["status"].value_counts().sort_index()
        return {str(status): int(count) for status, count in counts.items()}
    intervals = result.intervals
    finished = {s: int(intervals[f"sessions_{s}"].sum()) for s in ("canceled", "ended", "failed")}
    live = int(intervals["sessions_created"].sum()) - sum(finished.values())
    statuses = {s: n for s, n in finished.items() if n}
    return statuses | ({"not finished": live} if live else {})
