"""The headline numbers of one run, computed from its tables only.

Why from the tables: a sweep aggregates these over replications, and a notebook can recompute
any of them from the Parquet files; nothing here looks at the simulator.
"""

from __future__ import annotations

import math

from harness.collect import RunResult
from sim.billing.ledger import ENTRY_KINDS, KIND_RULES

#: Ledger kinds that are customer usage (what ``GET /v1/usage`` sums).
USAGE_KINDS: tuple[str, ...] = tuple(k for k in ENTRY_KINDS if KIND_RULES[k].usage)

__all__ = ["METRICS", "USAGE_KINDS", "summarize", "summary_markdown"]

#: Metric name → what it measures (the sweep's columns, the summary's lines).
METRICS: dict[str, str] = {
    "session_clients": "clients that wanted a session",
    "sessions_created": "sessions the service accepted",
    "sessions_started": "sessions that reached their first frame",
    "no_capacity": "sessions failed with no_capacity (start-up timeout)",
    "no_capacity_rate": "no_capacity / sessions created",
    "at_capacity_refusals": "create attempts refused with 503 at_capacity",
    "first_attempt_at_capacity_rate": "first create attempts refused at_capacity / clients",
    "refused_rate": "session clients that never got a session / session clients",
    "retried_calls": "create attempts after the first",
    "mean_wait_seconds": "mean start-up wait (started_at - created_at) of placed sessions",
    "p95_wait_seconds": "95th percentile of that wait",
    "wait_probability": "fraction of placed sessions that waited at all",
    "mean_utilization": "mean busy / capacity over the samples",
    "billable_seconds": "billable seconds of every session",
    "credits_charged": "credits charged (ledger usage rows)",
}


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def summarize(result: RunResult) -> dict[str, float]:
    """Every metric of ``METRICS`` for one run (NaN when undefined, e.g. no sessions)."""
    sessions = result.sessions
    clients = result.clients
    calls = result.api_calls
    session_clients = clients[clients["kind"] == "session"]
    creates = calls[calls["operation"] == "createSession"]
    placed = sessions[sessions["started_at"].notna()]
    wait = placed["wait_seconds"]
    at_capacity = creates[creates["outcome"] == "at_capacity"]
    first = creates[creates["attempt"] == 1]
    no_capacity = int((sessions["error_code"] == "no_capacity").sum())
    ledger = result.ledger
    usage_rows = ledger[ledger["kind"].isin(USAGE_KINDS)]
    utilization = result.utilization["utilization"]
    return {
        "session_clients": float(len(session_clients)),
        "sessions_created": float(len(sessions)),
        "sessions_started": float(sessions["first_frame_at"].notna().sum()),
        "no_capacity": float(no_capacity),
        "no_capacity_rate": _ratio(no_capacity, len(sessions)),
        "at_capacity_refusals": float(len(at_capacity)),
        "first_attempt_at_capacity_rate": _ratio(
            float((first["outcome"] == "at_capacity").sum()), len(first)
        ),
        "refused_rate": _ratio(
            float((~session_clients["final_outcome"].isin(["ok", "replayed"])).sum()),
            len(session_clients),
        ),
        "retried_calls": float(creates["retried"].sum()),
        "mean_wait_seconds": float(wait.mean()) if len(wait) else math.nan,
        "p95_wait_seconds": float(wait.quantile(0.95)) if len(wait) else math.nan,
        "wait_probability": _ratio(float((wait > 1e-9).sum()), len(wait)),
        "mean_utilization": float(utilization.mean()) if utilization.notna().any() else math.nan,
        "billable_seconds": float(sessions["billable_seconds"].sum()),
        "credits_charged": float(usage_rows["credits"].sum()),
    }


def summary_markdown(result: RunResult) -> str:
    """A short Markdown report: the metrics, then sessions by final status and refusals."""
    metrics = summarize(result)
    lines = [f"# Scenario `{result.scenario}` (seed {result.seed})", ""]
    lines += [f"Simulated {result.duration / 3600:.2f} h.", "", "| metric | value |", "|---|---|"]
    for name, value in metrics.items():
        shown = "n/a" if math.isnan(value) else f"{value:,.4g}"
        lines.append(f"| {name} | {shown} |")
    lines += ["", "## Sessions by final status", "", "| status | sessions |", "|---|---|"]
    for status, count in result.sessions["status"].value_counts().sort_index().items():
        lines.append(f"| {status} | {count} |")
    refusals = result.api_calls[~result.api_calls["outcome"].isin(["ok", "replayed"])]
    lines += ["", "## Refused requests", "", "| operation | code | count |", "|---|---|---|"]
    counts = refusals.groupby(["operation", "outcome"]).size().reset_index(name="count")
    for row in counts.itertuples(index=False):
        lines.append(f"| {row.operation} | {row.outcome} | {row.count} |")
    return "\n".join(lines) + "\n"
