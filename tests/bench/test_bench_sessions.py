"""The sessions benchmark runs and every simulated session finishes (no timing asserted)."""

from __future__ import annotations

from bench import bench_sessions
from bench.__main__ import discover


def test_sessions_bench_runs_at_a_tiny_scale() -> None:
    result = bench_sessions.run(0.005)  # raises if any session did not finish
    assert result["customers"] == 200
    assert result["ratio_platform_over_baseline"] > 0
    assert result["long_over_short"] > 0


def test_bench_discovers_every_module() -> None:
    assert {"bench_sessions", "bench_usage"} <= set(discover())
