"""The served benchmark judges each fifth of its run against the first, and runs end to end
against a real ``avatar-sim serve`` (a short run, in ``make test-slow``; no timing asserted)."""

from __future__ import annotations

import pytest

from bench import bench_served

pytestmark = pytest.mark.req("PERF-5")


def test_each_fifth_is_judged_against_the_first_and_unanswered_requests_apart() -> None:
    answers = [(t / 10, 201) for t in range(500)] + [(40.0, 0), (49.9, 200)]
    report = bench_served.judge(answers, 50.0)
    assert report["requests_per_second_by_fifth"] == [10.0, 10.0, 10.0, 10.0, 10.1]
    assert report["statuses"] == {"201": 500, "0": 1, "200": 1}
    assert report["worst_fifth_over_first"] == 1.0 and report["verdicts"][0]["met"] is True
    slower = bench_served.judge([(t / 10, 200) for t in range(200)] + [(45.0, 200)], 50.0)
    assert slower["verdicts"][0]["met"] is False  # fifths with no answer at all


def test_the_servers_cpu_per_answer_is_judged_when_known() -> None:
    answers = [(t / 10, 201) for t in range(500)]  # 100 answers a fifth
    steady = bench_served.judge(answers, 50.0, [1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    assert steady["server_cpu_ms_per_answer_by_fifth"] == [1.0] * 5
    assert [v["met"] for v in steady["verdicts"]] == [True, True]
    costlier = bench_served.judge(answers, 50.0, [1.0, 1.1, 1.2, 1.3, 1.4, 1.53])
    assert costlier["verdicts"][1]["met"] is False  # 1.3 ms against 1.0 in the last fifth
    unknown = bench_served.judge(answers, 50.0, [None] * 6)  # not Linux: not judged
    assert unknown["server_cpu_ms_per_answer_by_fifth"] is None and len(unknown["verdicts"]) == 1


@pytest.mark.slow
def test_the_served_benchmark_runs_against_a_real_server() -> None:
    report = bench_served.run(10 / 300)  # ten seconds
    assert report["requests"] > 0 and set(report["statuses"]) <= {"200", "201", "0"}
    assert report["statuses"].get("201", 0) > 0 and report["statuses"].get("200", 0) > 0
    assert len(report["requests_per_second_by_fifth"]) == 5
