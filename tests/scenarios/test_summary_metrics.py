"""A summary run's metrics come from its aggregates: equal to the full run's where determined,
NaN (never a false zero) where the aggregates do not determine them (NB-2, PERF-3). Every
metric, the wait percentiles included, is determined by a window on the interval grid.

The same seeded scenario runs at ``full`` and at ``summary`` (the level changes what is kept,
never what happens), so every metric the summary run reports must be the full run's value.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.runner import run_scenario
from harness.runner.metrics import METRICS, summarize, summary_markdown
from harness.runner.tables import RunResult
from tests.scenarios.helpers import scenario

#: Counted by the day of a ledger row: undetermined by a window that cuts a day.
BY_DAY = {"credits_charged"}


@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    # Two workers and a queue of one: refusals, waits and no_capacity all happen. An hour of
    # cooldown lets every session finish, so the billable seconds are all summed.
    busy: dict[str, Any] = {
        "config": {"scheduler": {"workers": 2, "max_queue_length": 1}},
        "cooldown": "1h",
    }
    return {level: run_scenario(scenario(records=level, **busy)) for level in ("full", "summary")}


def _compare(
    runs: dict[str, RunResult], window: tuple[float, float] | None
) -> tuple[dict[str, float], set[str]]:
    """The full run's metrics, and the names the summary run determines (checked equal)."""
    full, summary = summarize(runs["full"], window), summarize(runs["summary"], window)
    assert list(summary) == list(METRICS) == list(full)
    defined = {name for name, value in summary.items() if not math.isnan(value)}
    for name in defined:
        assert summary[name] == pytest.approx(full[name], rel=1e-12, abs=1e-12), name
    return full, defined


@pytest.mark.req("NB-2", "PERF-3")
def test_a_summary_run_reports_the_full_runs_metrics_over_the_whole_run(
    runs: dict[str, RunResult],
) -> None:
    full, defined = _compare(runs, None)
    assert defined == set(METRICS)
    # The scenario exercises what is compared: a zero here would hide a false zero.
    for name in ("at_capacity_refusals", "waited_sessions", "refused_clients", "retried_calls",
                 "p95_placement_wait_seconds", "no_capacity"):  # fmt: skip
        assert full[name] > 0, name


@pytest.mark.req("NB-2", "PERF-3")
def test_a_window_holding_every_client_determines_the_session_metrics(
    runs: dict[str, RunResult],
) -> None:
    window = (0.0, 20 * 60.0)  # the scenario's (0, duration)
    _full, defined = _compare(runs, window)
    assert defined == set(METRICS) - BY_DAY  # charged in the cooldown too


@pytest.mark.req("NB-2", "PERF-3")
def test_a_warm_up_window_leaves_undetermined_metrics_missing_not_zero(
    runs: dict[str, RunResult],
) -> None:
    full, defined = _compare(runs, (300.0, 1200.0))  # on the one-minute grid: exact
    assert defined == set(METRICS) - BY_DAY
    assert full["sessions_created"] < summarize(runs["full"])["sessions_created"]
    _full, defined = _compare(runs, (330.0, 1200.0))  # off the grid: intervals straddle it
    assert defined == {"mean_utilization"}


@pytest.mark.req("NB-2")
def test_a_summary_runs_report_counts_sessions_and_refusals_from_the_aggregates(
    runs: dict[str, RunResult],
) -> None:
    full, summary = runs["full"], runs["summary"]
    text = summary_markdown(summary)
    for status, count in full.sessions["status"].value_counts().items():
        assert f"| {status} | {count:,} |" in text
    refused = full.api_calls[~full.api_calls["outcome"].isin(["ok", "replayed"])]
    assert not refused.empty
    for (operation, outcome), count in refused.groupby(["operation", "outcome"]).size().items():
        assert f"| {operation} | {outcome} | {count:,} |" in text
    assert "| p95_placement_wait_seconds | n/a |" not in text
