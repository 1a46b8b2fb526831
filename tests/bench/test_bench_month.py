"""The month the benchmark runs is what users run, and its report says how fast it ran against
the yardstick (PERF-6, PERF-9); stand-in months, no timing asserted."""

from __future__ import annotations

from typing import Any

import pytest

from bench import bench_month
from bench.bench_month import BASE_RATE_OVER_YARDSTICK
from bench.month import RUNS_PER_SESSION, TIMEZONES, month_scenario
from bench.reference import REFERENCE_CUSTOMERS_PER_SECOND


def _months(rss: float) -> Any:
    def measure(sessions: int, records: str) -> dict[str, Any]:
        return {"sessions": sessions, "records": records, "wall_seconds": 2.0, "peak_rss_mb": rss}

    return measure


def _machine() -> list[float]:
    return [REFERENCE_CUSTOMERS_PER_SECOND]


@pytest.mark.req("PERF-6")
def test_the_month_runs_models_and_reads_usage_in_two_timezones() -> None:
    scenario = month_scenario(100_000)
    per_hour = sum(mix.rate_per_hour for mix in scenario.runs)
    sessions_per_hour = 100_000 / (30 * 24)
    assert per_hour == pytest.approx(sessions_per_hour * RUNS_PER_SESSION)
    assert {mix.model for mix in scenario.runs} == {"sim/echo-text", "sim/speech"}
    assert scenario.usage_timezones == TIMEZONES and len(set(TIMEZONES)) == 2


@pytest.mark.req("PERF-6")
@pytest.mark.parametrize(("rss", "met"), [(1000.0, True), (1100.0, False)])
def test_the_million_session_summary_month_is_held_to_one_gigabyte(rss: float, met: bool) -> None:
    report = bench_month.run(0.001, measure=_months(rss), speed=_machine)
    assert report["1m_summary"]["goal"]["peak_rss_mb"] == 1024.0
    assert report["1m_summary"]["meets_goal"] is met
    assert report["100k_full"]["meets_goal"] is (rss <= 600.0)


@pytest.mark.req("PERF-9")
def test_each_month_reports_its_rate_over_the_yardstick() -> None:
    """1,000 sessions in 2 s is 500 a second, against the yardstick's customers a second."""
    report = bench_month.run(0.001, measure=_months(500.0), speed=_machine)
    for name in ("100k_full", "100k_sessions", "100k_summary", "1m_summary"):
        month = report[name]
        expected = month["sessions"] / month["wall_seconds"] / REFERENCE_CUSTOMERS_PER_SECOND
        assert month["rate_over_yardstick"] == pytest.approx(expected, abs=1e-4)


@pytest.mark.req("PERF-9")
@pytest.mark.parametrize(("customers_per_second", "met"), [(1_000.0, True), (10_000.0, False)])
def test_the_two_goal_months_are_judged_against_step_ones_base(
    customers_per_second: float, met: bool
) -> None:
    """500 and 1,000 sessions in 2 s over a yardstick of 1,000 a second are 0.25 and 0.5, above
    the base; over 10,000 a second they are 0.025 and 0.05, below it."""
    report = bench_month.run(0.001, measure=_months(500.0), speed=lambda: [customers_per_second])
    judged = [v for v in report["verdicts"] if "step one's base" in v["goal"]]
    assert [v["figure"].split(":")[0] for v in judged] == list(BASE_RATE_OVER_YARDSTICK)
    assert [v["met"] for v in judged] == [met, met]
