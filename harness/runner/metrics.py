"""The headline numbers of one run, computed from its tables only, within a measurement window.

Why from the tables: a sweep aggregates these over replications, and a notebook can recompute
any of them from the Parquet files; nothing here looks at the simulator.

**One definition per metric**, whatever the run kept and wherever it is shown (the summary,
the demo's report, a sweep's columns, a plan): each metric below says what it counts, and its
population says which window rule applies. A queue starts empty, so the scenario's ``warmup``
and ``measure`` give the measured window ``[start, end)``, and

- a **client** counts in the window it *arrived* in (``session_clients``, the refusals);
- a **session** counts in the window it was *created* in, with everything that became of it,
  whenever that happened (its placement, first frame, failure, billable seconds);
- a **request** counts in the window it was *made* in;
- the **pool** counts over the sampling intervals that start in the window;
- a **ledger row** counts in the window it was written in.

The two start-up waits are named apart (``harness.runner.waits``): the *placement* wait (created →
a worker takes the job) and the *first-frame* wait (created → first frame, what the customer
sees); their percentiles are read from the wait histogram at every records level.
Utilization is defined once: busy worker-seconds over worker-seconds in the pool, a time
average from the pool's meter (never a mean of snapshots).

Refusals are split by cause, because their causes answer to different fixes: ``capacity``
(``at_capacity``: the pool's queue was full), ``caps`` (``concurrent_sessions``: a key's or
an organization's concurrency cap), ``rate_limit`` (``rate_limited``), ``credits``
(``insufficient_credits``) and ``other``. Only the first is the pool's; adding workers cannot
lower the others.

Every metric declares its kind, because the kind decides how a sweep builds its interval and how
a summary prints it: a proportion knows its numerator and denominator (both metrics too), so
replications can be pooled into one binomial interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from harness.runner.aggregate_metrics import CAUSES, summarize_aggregates, window_wait_counts
from harness.runner.tables import USAGE_KINDS, RunResult
from harness.runner.waits import histogram, quantile

__all__ = [
    "CAUSES",
    "METRICS",
    "RENAMED",
    "USAGE_KINDS",
    "WINDOW_RULES",
    "Metric",
    "cause_of",
    "epoch_of",
    "format_value",
    "pool_utilization",
    "resolve_metric",
    "summarize",
    "summary_markdown",
    "wait_counts",
    "window_text",
]

Kind = Literal["count", "proportion", "fraction", "seconds", "credits"]
Population = Literal["clients", "sessions", "requests", "pool", "ledger"]
#: How a metric moves as workers are added: ``down`` (waits, failures), ``up`` or ``none``
#: (refusals by caps, rate limits or credits do not depend on the pool).
Direction = Literal["down", "up", "none"]

#: Population → the window rule, as a summary, report or plan states it.
WINDOW_RULES: dict[str, str] = {
    "clients": "clients that arrived in the window",
    "sessions": "sessions created in the window, with whatever became of them later",
    "requests": "requests made in the window",
    "pool": "the pool over the sampling intervals that start in the window",
    "ledger": "ledger rows written in the window",
}


@dataclass(frozen=True, slots=True)
class Metric:
    """What a metric measures, its kind, population and range; what a proportion divides; and
    for a percentile of a wait, which wait and which quantile."""

    description: str
    kind: Kind
    population: Population
    numerator: str | None = None
    denominator: str | None = None
    whole: bool = False  # a whole number whatever its kind (billable seconds are integers)
    workers: Direction = "none"
    percentile: tuple[str, float] | None = None  # (wait kind, quantile)

    @property
    def bounds(self) -> tuple[float, float]:
        """The range the metric (and any interval of it) lies in."""
        if self.kind in ("proportion", "fraction"):
            return 0.0, 1.0
        return 0.0, math.inf

    @property
    def unit(self) -> str:
        return {"seconds": "s", "credits": "credits"}.get(self.kind, "")


def _share(
    description: str, numerator: str, denominator: str, population: Population, workers: Direction
) -> Metric:
    return Metric(description, "proportion", population, numerator, denominator, workers=workers)


def _refusals() -> dict[str, Metric]:
    metrics: dict[str, Metric] = {}
    for cause, codes in CAUSES.items():
        said = f"`{codes[0]}`" if codes else "any other code"
        direction: Direction = "down" if cause == "capacity" else "none"
        metrics[f"refused_{cause}"] = Metric(
            f"session clients whose last attempt was refused with {said}", "count", "clients"
        )
        metrics[f"refused_{cause}_rate"] = _share(
            f"refused_{cause} / session_clients",
            f"refused_{cause}",
            "session_clients",
            "clients",
            direction,
        )
    return metrics


#: Metric name → what it measures (the sweep's columns, the summary's lines, a plan's SLOs).
METRICS: dict[str, Metric] = {
    "session_clients": Metric("clients that wanted a session", "count", "clients"),
    "refused_clients": Metric(
        "session clients that never got a session (every cause)", "count", "clients"
    ),
    **_refusals(),
    "sessions_created": Metric("sessions the service accepted", "count", "sessions"),
    "placed_sessions": Metric(
        "sessions a worker took (`started_at` set)", "count", "sessions", workers="up"
    ),
    "sessions_started": Metric(
        "sessions that reached their first frame", "count", "sessions", workers="up"
    ),
    "waited_sessions": Metric(
        "placed sessions that waited for a worker at all", "count", "sessions", workers="down"
    ),
    "no_capacity": Metric(
        "sessions failed `no_capacity` (no worker within the start-up timeout)",
        "count",
        "sessions",
        workers="down",
    ),
    "no_capacity_rate": _share(
        "no_capacity / sessions_created", "no_capacity", "sessions_created", "sessions", "down"
    ),
    "placement_wait_probability": _share(
        "waited_sessions / placed_sessions",
        "waited_sessions",
        "placed_sessions",
        "sessions",
        "down",
    ),
    "mean_placement_wait_seconds": Metric(
        "mean placement wait (created → a worker took it) of placed sessions",
        "seconds",
        "sessions",
        workers="down",
    ),
    "p95_placement_wait_seconds": Metric(
        "95th percentile of the placement wait (upper edge of its histogram bin)",
        "seconds",
        "sessions",
        workers="down",
        percentile=("placement", 0.95),
    ),
    "mean_first_frame_wait_seconds": Metric(
        "mean first-frame wait (created → first frame) of sessions that reached it",
        "seconds",
        "sessions",
        workers="down",
    ),
    "p95_first_frame_wait_seconds": Metric(
        "95th percentile of the first-frame wait (upper edge of its histogram bin)",
        "seconds",
        "sessions",
        workers="down",
        percentile=("first_frame", 0.95),
    ),
    "billable_seconds": Metric(
        "billable seconds of the sessions", "seconds", "sessions", whole=True, workers="up"
    ),
    "first_attempts": Metric("first create attempts", "count", "requests"),
    "first_attempt_at_capacity": Metric(
        "first create attempts refused `at_capacity`", "count", "requests", workers="down"
    ),
    "first_attempt_at_capacity_rate": _share(
        "first_attempt_at_capacity / first_attempts",
        "first_attempt_at_capacity",
        "first_attempts",
        "requests",
        "down",
    ),
    "at_capacity_refusals": Metric(
        "create attempts refused `at_capacity`", "count", "requests", workers="down"
    ),
    "retried_calls": Metric("create attempts after the first", "count", "requests"),
    "mean_utilization": Metric(
        "busy worker-seconds / worker-seconds in the pool (a time average)",
        "fraction",
        "pool",
        workers="down",
    ),
    "credits_charged": Metric("credits charged (ledger usage rows)", "credits", "ledger"),
}

#: Names of earlier releases, still read (with a note) by sweep files and SLOs for one release:
#: old name → new name (``None``: gone, the note says what replaces it).
RENAMED: dict[str, str | None] = {
    "mean_wait_seconds": "mean_placement_wait_seconds",
    "p95_wait_seconds": "p95_placement_wait_seconds",
    "wait_probability": "placement_wait_probability",
    "refused_rate": None,
}


def resolve_metric(name: str) -> tuple[str, str | None]:
    """The metric ``name`` stands for, and a note when it is an old name; ``ValueError`` (with
    the closest names) for a name that is unknown or gone."""
    if name in METRICS:
        return name, None
    if name in RENAMED:
        new = RENAMED[name]
        if new is None:
            causes = ", ".join(f"refused_{c}_rate" for c in CAUSES)
            raise ValueError(f"{name!r} is gone: refusals are split by cause ({causes})")
        return new, f"{name!r} is now {new!r} (the old name is read for one more release)"
    import difflib

    # Only current names are suggested: a name close to an old one suggests what replaced it.
    matches = difflib.get_close_matches(name, [*METRICS, *RENAMED], n=3)
    current = [RENAMED.get(match, match) if match in RENAMED else match for match in matches]
    close = list(dict.fromkeys(match for match in current if match is not None))
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(f"unknown metric {name!r}{hint} (known: {', '.join(METRICS)})")


def cause_of(outcome: str) -> str | None:
    """The refusal cause of a client's final outcome (``None``: it got its session)."""
    if outcome in ("ok", "replayed"):
        return None
    for cause, codes in CAUSES.items():
        if outcome in codes:
            return cause
    return "other"


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


def _within(times: pd.Series, window: tuple[float, float] | None) -> pd.Series:
    if window is None:
        return pd.Series(True, index=times.index)
    start, end = window
    return (times >= start) & (times < end)


def epoch_of(result: RunResult) -> pd.Timestamp:
    """The instant of simulated second 0 (every aggregate table carries ``at`` beside ``t``)."""
    intervals = result.intervals
    epoch: pd.Timestamp = intervals["at"].iloc[0] - pd.Timedelta(
        seconds=float(intervals["t"].iloc[0])
    )
    return epoch


def _seconds(result: RunResult, moments: pd.Series) -> pd.Series:
    return (moments - epoch_of(result)) / pd.Timedelta(seconds=1)


def pool_utilization(result: RunResult, window: tuple[float, float] | None = None) -> float:
    """``mean_utilization``: busy worker-seconds over worker-seconds in the pool, over the
    sampling intervals that start in ``window`` (the one definition, at every level)."""
    pool = result.utilization
    rows = pool[_within(pool["t"], window)]
    present = float(rows["worker_seconds"].sum())
    return float(rows["busy_seconds"].sum()) / present if present > 0 else math.nan


def wait_counts(
    result: RunResult, window: tuple[float, float] | None = None
) -> dict[str, np.ndarray[Any, Any]] | None:
    """The histogram of each wait (``harness.runner.waits``) of the sessions created in ``window``:
    from the rows when the run kept them, else from its ``waits`` table, ``None`` when the
    window cuts one of its intervals that holds waits."""
    if result.records == "summary":
        return window_wait_counts(result, window)
    sessions = result.sessions[_within(_seconds(result, result.sessions["created_at"]), window)]
    return {
        "placement": histogram(sessions["placement_wait_seconds"].dropna().to_numpy()),
        "first_frame": histogram(sessions["first_frame_wait_seconds"].dropna().to_numpy()),
    }


def summarize(result: RunResult, window: tuple[float, float] | None = None) -> dict[str, float]:
    """Every metric of ``METRICS`` for one run (NaN when undefined, e.g. no sessions) within
    ``window`` (simulated seconds ``[start, end)``; default: the whole run), by the window
    rules of the module's docstring.

    A ``records: summary`` run has no per-row tables: its metrics come from the aggregates,
    the same numbers for a window on its interval grid and NaN where the aggregates do not
    determine them (``harness.runner.aggregate_metrics``)."""
    if result.records == "summary":
        aggregated = summarize_aggregates(result, window)
        aggregated["mean_utilization"] = pool_utilization(result, window)
        return {name: aggregated[name] for name in METRICS}
    clients = result.clients
    arrived = clients[_within(clients["t"], window)]
    session_clients = arrived[arrived["kind"] == "session"]
    causes = session_clients["final_outcome"].astype(str).map(cause_of)
    created = _seconds(result, result.sessions["created_at"])
    sessions = result.sessions[_within(created, window)]
    calls = result.api_calls[_within(result.api_calls["t"], window)]
    creates = calls[calls["operation"] == "createSession"]
    placed = sessions["placement_wait_seconds"].dropna()
    framed = sessions["first_frame_wait_seconds"].dropna()
    first = creates[creates["attempt"] == 1]
    first_refused = float((first["outcome"] == "at_capacity").sum())
    no_capacity = float((sessions["error_code"] == "no_capacity").sum())
    waited = float((placed > 1e-9).sum())
    counts = wait_counts(result, window)
    assert counts is not None  # the rows answer for any window
    ledger = result.ledger[_within(result.ledger["t"], window)]
    usage_rows = ledger[ledger["kind"].isin(USAGE_KINDS)]
    values: dict[str, float] = {
        "session_clients": float(len(session_clients)),
        "refused_clients": float(causes.notna().sum()),
    }
    for cause in CAUSES:
        refused = float((causes == cause).sum())
        values[f"refused_{cause}"] = refused
        values[f"refused_{cause}_rate"] = _ratio(refused, len(session_clients))
    values |= {
        "sessions_created": float(len(sessions)),
        "placed_sessions": float(len(placed)),
        "sessions_started": float(len(framed)),
        "waited_sessions": waited,
        "no_capacity": no_capacity,
        "no_capacity_rate": _ratio(no_capacity, len(sessions)),
        "placement_wait_probability": _ratio(waited, len(placed)),
        "mean_placement_wait_seconds": float(placed.mean()) if len(placed) else math.nan,
        "p95_placement_wait_seconds": quantile(counts["placement"], 0.95),
        "mean_first_frame_wait_seconds": float(framed.mean()) if len(framed) else math.nan,
        "p95_first_frame_wait_seconds": quantile(counts["first_frame"], 0.95),
        "billable_seconds": float(sessions["billable_seconds"].sum()),
        "first_attempts": float(len(first)),
        "first_attempt_at_capacity": first_refused,
        "first_attempt_at_capacity_rate": _ratio(first_refused, len(first)),
        "at_capacity_refusals": float((creates["outcome"] == "at_capacity").sum()),
        "retried_calls": float(creates["retried"].sum()),
        "mean_utilization": pool_utilization(result, window),
        "credits_charged": float(usage_rows["credits"].sum()),
    }
    return {name: values[name] for name in METRICS}


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


def window_text(window: tuple[float, float] | None, duration: float) -> str:
    """The measured window in words, with the rule each population follows."""
    start, end = (0.0, duration) if window is None else window
    rules = "; ".join(f"{population}: {rule}" for population, rule in WINDOW_RULES.items())
    return (
        f"Measured window [{start:g} s, {end:g} s) of simulated time ({(end - start) / 3600:.2f} h)"
        f". Each metric counts by its population ({rules})."
    )


def metrics_table(metrics: dict[str, float]) -> list[str]:
    """The metrics as a Markdown table: value, unit, population and what each measures."""
    lines = ["| metric | value | unit | counts | what it measures |", "|---|---|---|---|---|"]
    for name, value in metrics.items():
        spec = METRICS[name]
        lines.append(
            f"| {name} | {format_value(name, value)} | {spec.unit} | {spec.population} "
            f"| {spec.description} |"
        )
    return lines


def summary_markdown(
    result: RunResult,
    window: tuple[float, float] | None = None,
    *,
    warnings: Sequence[str] = (),
) -> str:
    """A short Markdown report: the window, any warning about a binding limit, the metrics,
    refusals by cause, sessions by final status and refused requests."""
    metrics = summarize(result, window)
    lines = [f"# Scenario `{result.scenario}` (seed {result.seed})", ""]
    lines += [f"Simulated {result.duration / 3600:.2f} h. {window_text(window, result.duration)}"]
    if warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {warning}" for warning in warnings]
    lines += ["", *metrics_table(metrics)]
    lines += ["", "## Session clients refused, by cause", ""]
    lines += ["| cause | codes | clients | share of session clients |", "|---|---|---|---|"]
    for cause, codes in CAUSES.items():
        count, rate = metrics[f"refused_{cause}"], metrics[f"refused_{cause}_rate"]
        said = ", ".join(f"`{c}`" for c in codes) or "any other"
        lines.append(
            f"| {cause} | {said} | {format_value('refused_clients', count)} "
            f"| {format_value(f'refused_{cause}_rate', rate)} |"
        )
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
