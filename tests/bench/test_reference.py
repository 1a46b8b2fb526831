"""The month's time goals are judged on the reference machine's seconds (``bench.reference``):
a month's wall time here is scaled by how fast this machine runs bare SimPy against the
reference, and the report keeps the unscaled judgement beside it."""

from __future__ import annotations

from typing import Any

import pytest

from bench import bench_month
from bench.reference import REFERENCE_CUSTOMERS_PER_SECOND, on_reference, yardstick

pytestmark = pytest.mark.req("PERF-5")

_REFERENCE = REFERENCE_CUSTOMERS_PER_SECOND


def test_a_machine_at_a_third_of_the_reference_takes_three_times_as_long() -> None:
    assert on_reference(30.0, [_REFERENCE / 3]) == pytest.approx(10.0)
    assert on_reference(30.0, [_REFERENCE]) == pytest.approx(30.0)
    assert on_reference(10.0, [_REFERENCE * 2]) == pytest.approx(20.0)


def test_the_median_sample_scales_so_one_noisy_run_does_not_move_the_figure() -> None:
    noisy = [_REFERENCE / 2, _REFERENCE / 2, _REFERENCE / 100, _REFERENCE * 9, _REFERENCE / 2]
    assert on_reference(24.0, noisy) == pytest.approx(12.0)


@pytest.mark.parametrize("samples", [[], [0.0], [_REFERENCE, -1.0]])
def test_a_time_is_not_scaled_without_positive_samples(samples: list[float]) -> None:
    with pytest.raises(ValueError, match="positive samples"):
        on_reference(10.0, samples)


def test_the_yardstick_times_bare_simpy_once_per_run() -> None:
    speeds = yardstick(runs=2, customers=200)
    assert len(speeds) == 2 and all(speed > 0 for speed in speeds)
    with pytest.raises(ValueError, match="at least one run"):
        yardstick(runs=0)


def _months(wall: float, rss: float, *, large_wall: float | None = None) -> Any:
    """Every month takes ``wall`` seconds, the large one (1,000 sessions at the tests' scale)
    ``large_wall`` if given, and peaks at ``rss`` MB."""

    def measure(sessions: int, records: str) -> dict[str, Any]:
        seconds = large_wall if large_wall is not None and sessions == 1_000 else wall
        return {
            "sessions": sessions,
            "records": records,
            "wall_seconds": seconds,
            "peak_rss_mb": rss,
        }

    return measure


class _Machine:
    """A yardstick that always measures ``speed`` and counts how often it was timed."""

    def __init__(self, speed: float) -> None:
        self.speed, self.calls = speed, 0

    def __call__(self) -> list[float]:
        self.calls += 1
        return [self.speed]


def test_a_month_over_its_seconds_here_meets_the_goal_on_a_machine_three_times_slower() -> None:
    slow = _Machine(_REFERENCE / 3)
    months = _months(wall=27.0, large_wall=270.0, rss=500.0)
    report = bench_month.run(0.001, measure=months, speed=slow)
    for name, scaled in (("100k_full", 9.0), ("1m_summary", 90.0)):  # 20 % more is within
        month = report[name]
        assert month["reference_wall_seconds"] == pytest.approx(scaled)
        assert month["meets_goal"] is True
        assert month["meets_goal_here"] is False
    assert [v["met"] for v in report["verdicts"][:2]] == [True, True]  # the time goals
    assert report["verdicts"][0]["figure"] == (
        "100k_full: 9.0 s (±20%) on the reference (27.0 s here), 500.0 MB"
    )
    assert report["verdicts"][0]["goal"] == "<= 12 s, <= 600 MB"
    assert slow.calls == 5  # before the first month and after each of the four
    assert report["yardstick"]["runs"] == 5
    assert report["yardstick"]["machine_over_reference"] == pytest.approx(1 / 3, abs=1e-3)


def test_a_month_over_its_goal_on_the_reference_machine_fails_it() -> None:
    report = bench_month.run(
        0.001, measure=_months(wall=13.0, rss=500.0), speed=_Machine(_REFERENCE)
    )
    assert report["100k_full"]["reference_wall_seconds"] == pytest.approx(13.0)
    assert report["100k_full"]["meets_goal"] is False
    assert report["1m_summary"]["meets_goal"] is True  # 13 s is within the 1M month's 120 s
    assert [v["met"] for v in report["verdicts"][:2]] == [False, True]  # the time goals


def test_a_month_within_its_goal_by_less_than_the_scalings_uncertainty_is_not_judged_met() -> None:
    """11 s on the reference is within 12 s, but 20 % more is not: not met for sure."""
    report = bench_month.run(
        0.001, measure=_months(wall=11.0, rss=500.0), speed=_Machine(_REFERENCE)
    )
    assert report["100k_full"]["reference_wall_seconds"] == pytest.approx(11.0)
    assert report["100k_full"]["meets_goal"] is False
    assert report["100k_full"]["meets_goal_here"] is True  # unscaled, 11 s is within 12 s


def test_memory_is_judged_as_measured_whatever_the_machines_speed() -> None:
    fast_enough = _Machine(_REFERENCE / 10)
    report = bench_month.run(0.001, measure=_months(wall=1.0, rss=700.0), speed=fast_enough)
    assert report["100k_full"]["meets_goal"] is False  # 700 MB over the 600 MB goal
    assert report["100k_full"]["meets_goal_here"] is False
    assert report["1m_summary"]["meets_goal"] is True  # within 1 GB
