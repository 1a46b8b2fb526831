"""The benchmarks run and every simulated session finishes (no timing asserted)."""

from __future__ import annotations

import pytest

from bench import bench_month, bench_sessions
from bench.__main__ import discover


def test_sessions_bench_runs_at_a_tiny_scale() -> None:
    result = bench_sessions.run(0.005)  # raises if any session did not finish
    assert result["customers"] == 200
    assert result["ratio_platform_over_baseline"] > 0
    assert result["ratio_platform_audio_over_baseline"] > 0
    assert result["long_over_short"] > 0 and result["long_over_short_audio"] > 0


def test_month_bench_measures_a_tiny_month_in_a_subprocess() -> None:
    report = bench_month._in_subprocess(300, "summary")
    assert report["records"] == "summary" and report["sessions"] > 200
    assert report["peak_rss_mb"] > 0 and report["wall_seconds"] >= 0


def test_a_month_that_fails_in_its_subprocess_says_which_and_why() -> None:
    with pytest.raises(RuntimeError, match=r"records='everything' failed(?s:.*)ScenarioError"):
        bench_month._in_subprocess(300, "everything")


def test_bench_discovers_every_module() -> None:
    assert {"bench_month", "bench_sessions", "bench_usage"} <= set(discover())
