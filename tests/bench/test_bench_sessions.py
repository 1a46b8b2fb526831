"""The benchmarks run, every simulated session finishes, and each goal is judged and printed
(no timing asserted: the figures are stand-ins or merely positive)."""

from __future__ import annotations

import json

import pytest

from bench import bench_month, bench_sessions
from bench.__main__ import discover, main, verdicts

pytestmark = pytest.mark.req("PERF-5")


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
    assert {"bench_month", "bench_served", "bench_sessions", "bench_usage"} <= set(discover())


@pytest.mark.req("PERF-5", "PERF-8")
def test_make_bench_ends_with_a_line_per_goal_on_standard_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--only", "bench_sessions", "--scale", "0.005", "--results", ""]) == 0
    printed = capsys.readouterr()
    lines = printed.err.splitlines()
    assert len(lines) == 2 and all(line.startswith("goal ") for line in lines)
    assert "platform / bare SimPy, audio off" in lines[0] and "(goal >= 0.28)" in lines[0]
    assert "60x longer over short, audio on" in lines[1] and "(goal <= 1.1)" in lines[1]
    assert all(json.loads(line) for line in printed.out.splitlines())  # still JSON lines


def test_a_goal_line_says_whether_it_was_met() -> None:
    report = {
        "machine": {"cores": 2},
        "bench_x": {
            "verdicts": [
                {"figure": "speed: 3", "goal": ">= 2", "met": True},
                {"figure": "size: 9", "goal": "<= 8", "met": False},
            ]
        },
    }
    assert verdicts(report) == [
        "goal met     bench_x: speed: 3 (goal >= 2)",
        "goal NOT MET bench_x: size: 9 (goal <= 8)",
    ]


@pytest.mark.req("PERF-5", "PERF-8")
@pytest.mark.parametrize(("ratio", "met"), [(0.3, True), (0.2, False)])
def test_the_sessions_bench_judges_its_ratio_goal(
    monkeypatch: pytest.MonkeyPatch, ratio: float, met: bool
) -> None:
    fake = {"baseline": ratio, "short": 1.0, "long": 1.0, "audio_short": 1.0, "audio_long": 1.05}
    monkeypatch.setattr(bench_sessions, "_baseline", lambda *a, **k: fake["baseline"])
    monkeypatch.setattr(
        bench_sessions,
        "_platform",
        lambda c, w, rate, hold, seed, *, audio=False: fake[
            ("audio_" if audio else "") + ("long" if hold > bench_sessions.HOLD else "short")
        ],
    )
    result = bench_sessions.run(0.005)
    assert result["ratio_platform_over_baseline"] == ratio
    assert [v["met"] for v in result["verdicts"]] == [met, True]  # 1.05 is within 1.1
