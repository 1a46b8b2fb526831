"""NB-3: sweeps over dotted paths, seeds per replication, process pool vs Dask, CIs."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from harness.scenarios import ScenarioError
from harness.sweep import (
    METHODS,
    SweepResult,
    aggregate,
    clip,
    load_sweep,
    parse_sweep,
    replication_seed,
    run_sweep,
    set_path,
    t_interval,
    tasks_of,
    wilson_interval,
)
from tests.scenarios.helpers import small


def _sweep(**overrides: Any) -> dict[str, Any]:
    base = small(duration="10m", cooldown="2m", runs=[], usage_timezones=["UTC"])
    data: dict[str, Any] = {
        "name": "tiny",
        "scenario": base,
        "seed": 5,
        "replications": 2,
        "grid": {"config.scheduler.workers": [1, 3], "arrivals[0].rate_per_hour": [60]},
        "metrics": ["sessions_created", "at_capacity_refusals", "mean_utilization"],
    }
    data.update(overrides)
    return data


@pytest.mark.req("NB-3")
def test_set_path_creates_mappings_and_indexes_lists() -> None:
    data = {"arrivals": [{"rate": 1}, {"rate": 2}]}
    assert set_path(data, "config.scheduler.workers", 4)["config"] == {"scheduler": {"workers": 4}}
    assert set_path(data, "arrivals[1].rate", 9)["arrivals"][1]["rate"] == 9
    assert set_path(data, "arrivals.0.rate", 7)["arrivals"][0]["rate"] == 7
    assert data == {"arrivals": [{"rate": 1}, {"rate": 2}]}  # never mutated
    with pytest.raises(ValueError, match="no item 5"):
        set_path(data, "arrivals[5].rate", 1)
    with pytest.raises(ValueError, match="not a dotted path"):
        set_path(data, "a..b", 1)


@pytest.mark.req("NB-3")
def test_points_are_validated_naming_the_point_and_field() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_sweep(_sweep(grid={"config.scheduler.workers": [2, -1]}), "s.yaml")
    assert info.value.problems == (
        "grid.config.scheduler.workers: value -1: config.scheduler.workers: Input should be "
        "greater than or equal to 0",
    )
    with pytest.raises(ScenarioError, match=r"metrics: unknown metric .nope."):
        parse_sweep(_sweep(metrics=["nope"]))
    with pytest.raises(ScenarioError, match="exactly one of"):
        parse_sweep(_sweep(scenario=None))


@pytest.mark.req("NB-10")
def test_a_bad_sweep_file_is_refused_in_one_round_with_files_and_lines(tmp_path: Path) -> None:
    """The sweep's own fields, the scenario file it names and every grid value that makes a
    bad point: all reported at once, each at its file and line (a grid value at the line of
    its path, once however many points have it)."""
    base = tmp_path / "base.yaml"
    base.write_text(
        "name: b\nduration: 1h\norganizations:\n  - {name: A, plan: gold}\n"
        "arrivals:\n  - {kind: poisson, rate_per_hour: 10}\n",
        encoding="utf-8",
    )
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "name: s\nbase: base.yaml\nreplications: 0\ngrid:\n"
        "  config.scheduler.workers: [2, -1, -3]\n  arrivals[0].rate_per_hour: [0, 5]\n"
        "metrics: [nope]\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError) as info:
        load_sweep(sweep)
    found = {(where, line): text for where, line, text in info.value.located}
    assert found[(str(sweep), 3)].startswith("replications: ")
    assert found[(str(sweep), 7)].startswith("metrics: unknown metric 'nope'")
    assert found[(str(base), 4)].startswith("organizations[0].plan: unknown plan 'gold'")
    assert len(found) == 3  # the base is broken: its grid points are not judged on top of it
    base.write_text(base.read_text(encoding="utf-8").replace("gold", "pro"), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_sweep(sweep)
    found = {(where, line): text for where, line, text in info.value.located}
    assert found[(str(sweep), 5)] == (
        "grid.config.scheduler.workers: values -1, -3: config.scheduler.workers: Input should "
        "be greater than or equal to 0"
    )
    assert found[(str(sweep), 6)].startswith("grid.arrivals[0].rate_per_hour: value 0: ")
    assert len(found) == 4
    message = str(info.value)
    assert f"{sweep}:5: grid.config.scheduler.workers" in message
    assert message.startswith(f"{sweep}: invalid (4 problems)")


@pytest.mark.req("NB-3")
def test_old_metric_names_are_read_for_one_release_with_a_note() -> None:
    with pytest.warns(FutureWarning, match="'mean_wait_seconds' is now 'mean_placement_wait"):
        sweep, _base, _points = parse_sweep(_sweep(metrics=["mean_wait_seconds"]))
    assert sweep.metrics == ("mean_placement_wait_seconds",)
    with pytest.raises(ScenarioError, match="refused_rate' is gone"):
        parse_sweep(_sweep(metrics=["refused_rate"]))


@pytest.mark.req("NB-3")
def test_seeds_derive_from_the_base_seed_and_are_shared_across_points() -> None:
    sweep, _base, points = parse_sweep(_sweep())
    tasks = tasks_of(sweep, points, replications=3)
    assert len(tasks) == 2 * 3
    by_rep = {(t.point, t.replication): t.seed for t in tasks}
    assert by_rep[(0, 1)] == by_rep[(1, 1)] == replication_seed(5, 1)
    assert len({replication_seed(5, r) for r in range(50)}) == 50
    assert replication_seed(5, 0) != replication_seed(6, 0)


@pytest.fixture(scope="module")
def pooled() -> SweepResult:
    sweep, _base, points = parse_sweep(_sweep())
    return run_sweep(sweep, points, workers=2, progress=False)


@pytest.mark.req("NB-3")
def test_process_pool_and_in_process_dask_give_identical_results(pooled: SweepResult) -> None:
    from distributed import Client

    sweep, _base, points = parse_sweep(_sweep())
    serial = run_sweep(sweep, points, workers=1, progress=False)
    with Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as c:
        on_dask = run_sweep(sweep, points, dask_client=c, progress=False)
    for other in (serial, on_dask):
        pd.testing.assert_frame_equal(pooled.runs, other.runs)
        pd.testing.assert_frame_equal(pooled.summary, other.summary)


@pytest.mark.req("NB-3")
def test_summary_has_means_and_confidence_intervals(pooled: SweepResult) -> None:
    summary = pooled.summary
    assert list(summary.columns) == [
        "point", "config.scheduler.workers", "arrivals[0].rate_per_hour", "metric", "n", "mean",
        "std", "ci_low", "ci_high", "method", "trials",
    ]  # fmt: skip
    assert len(summary) == 2 * 3
    for row in summary.to_dict("records"):
        values = pooled.runs.loc[pooled.runs["point"] == row["point"], row["metric"]]
        assert row["mean"] == pytest.approx(values.mean())
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
    wide = pooled.wide()
    assert {"sessions_created_mean", "sessions_created_ci_low", "mean_utilization_ci_high"} <= set(
        wide.columns
    )
    assert len(wide) == 2
    # More workers, fewer refusals: the parameter really reached the simulator.
    refusals = wide.set_index("config.scheduler.workers")["at_capacity_refusals_mean"]
    assert refusals[3] <= refusals[1]
    assert "| config.scheduler.workers |" in pooled.markdown()


@pytest.mark.req("NB-3")
@settings(max_examples=30)
@given(st.lists(st.floats(0, 1000, allow_nan=False), min_size=2, max_size=20))
def test_t_interval_matches_the_textbook(values: list[float]) -> None:
    low, high = t_interval(values)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values)
    if sd == 0:
        assert low == high == pytest.approx(mean)
        return
    half = stats.t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
    assert low == pytest.approx(mean - half, rel=1e-6, abs=1e-6)
    assert high == pytest.approx(mean + half, rel=1e-6, abs=1e-6)


@pytest.mark.req("NB-3")
def test_t_interval_known_value_and_degenerate_cases() -> None:
    # n = 3, mean 2, sd 1: half-width = t(0.975, 2) * 1 / sqrt(3) = 4.302653 / 1.732051.
    low, high = t_interval([1.0, 2.0, 3.0])
    assert (low, high) == pytest.approx((2 - 2.484138, 2 + 2.484138), abs=1e-5)
    assert all(math.isnan(v) for v in t_interval([1.0]))
    assert all(math.isnan(v) for v in t_interval([]))


@pytest.mark.req("NB-3")
def test_identical_replications_give_a_degenerate_interval() -> None:
    # Found by hypothesis: scipy's sem of identical values can be an ulp above zero.
    values = [683.2161577319099] * 7
    low, high = t_interval(values)
    assert low == high == pytest.approx(values[0])


@pytest.mark.req("NB-3")
def test_wilson_interval_known_values_and_range() -> None:
    # 0 of 10: the Wilson interval is [0, z²/(n+z²)] = [0, 0.2775]; a t interval would be [0, 0].
    low, high = wilson_interval(0, 10)
    assert low == 0 and high == pytest.approx(0.27753, abs=1e-4)
    low, high = wilson_interval(50, 100)
    assert (low, high) == pytest.approx((0.40383, 0.59617), abs=1e-4)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    assert clip((-0.2, 1.3), (0.0, 1.0)) == (0.0, 1.0)
    low, high = clip((math.nan, 2.0), (0.0, math.inf))
    assert math.isnan(low) and high == 2.0


@pytest.mark.req("NB-3")
def test_proportions_pool_counts_and_bounded_metrics_stay_in_range() -> None:
    """Two replications whose t interval would leave [0, 1]: the sweep's intervals do not."""
    runs = pd.DataFrame(
        {
            "point": [0, 0],
            "no_capacity": [0.0, 3.0],
            "sessions_created": [40.0, 60.0],
            "no_capacity_rate": [0.0, 0.05],
            "mean_utilization": [0.97, 0.999],
            "mean_placement_wait_seconds": [0.1, 9.0],
        }
    )
    raw_low, _ = t_interval([0.0, 0.05])
    assert raw_low < 0  # what the notebooks used to draw
    summary = aggregate(
        runs, [], ["no_capacity_rate", "mean_utilization", "mean_placement_wait_seconds"]
    )
    rows = summary.set_index("metric")
    rate = rows.loc["no_capacity_rate"]
    assert rate["method"] == "wilson" and rate["trials"] == 100
    assert rate["mean"] == pytest.approx(3 / 100)  # pooled, not the mean of the two ratios
    assert (rate["ci_low"], rate["ci_high"]) == pytest.approx(wilson_interval(3, 100))
    util = rows.loc["mean_utilization"]
    assert util["method"] == "t-clipped" and util["ci_high"] == 1.0 and util["ci_low"] >= 0
    wait = rows.loc["mean_placement_wait_seconds"]
    assert wait["ci_low"] == 0.0 and wait["ci_high"] > 9
    assert set(summary["method"]) <= set(METHODS)
