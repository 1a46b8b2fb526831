"""The plan benchmark judges its goal on the seconds it is given (no timing asserted: the
figures are stand-ins)."""

from __future__ import annotations

from typing import Any

import pytest

from bench import bench_plan
from bench.__main__ import discover

pytestmark = pytest.mark.req("PLAN-4")


def _week(seconds: float) -> Any:
    def measure(sessions: int) -> dict[str, Any]:
        return {"sessions": sessions, "wall_seconds": seconds, "steps": 168}

    return measure


@pytest.mark.parametrize(("seconds", "met"), [(300.0, True), (900.0, False)])
def test_the_week_is_judged_against_ten_minutes(seconds: float, met: bool) -> None:
    report = bench_plan.run(0.5, measure=_week(seconds), speed=lambda: [73_000.0])
    assert report["sessions"] == 50_000
    assert report["meets_goal_here"] is met
    assert report["reference_wall_seconds"] == seconds  # the reference machine's own speed
    (verdict,) = report["verdicts"]
    assert verdict["met"] is met and "<= 600 s" in verdict["goal"]


def test_the_plan_bench_is_discovered() -> None:
    assert "bench_plan" in discover()
