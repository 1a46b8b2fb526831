"""Each fast path the simulator keeps gives what its reference gives, and the benchmark that
weighs them runs (PERF-5: no timing asserted)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from bench import bench_fast_paths
from bench.fast_paths import FAST_PATHS, referenced
from bench.month import month_scenario
from harness.runner import simulate
from harness.runner.tables import collect


def _tables(sessions: int) -> dict[str, pd.DataFrame]:
    result = collect(simulate(month_scenario(sessions, records="full", days=2, seed=5)))
    return result.tables()


@pytest.fixture(scope="module")
def fast_tables() -> dict[str, pd.DataFrame]:
    return _tables(500)


@pytest.mark.req("SIM-2", "PERF-5")
@pytest.mark.parametrize("path", FAST_PATHS, ids=[path.name for path in FAST_PATHS])
def test_a_month_with_a_fast_paths_reference_gives_the_same_tables(
    path: Any, fast_tables: dict[str, pd.DataFrame]
) -> None:
    """n = 500 arrivals over two days of the month's traffic (retries, four surfaces, audio):
    with the reference in the fast path's place, every table is equal, cell for cell."""
    with referenced(path):
        tables = _tables(500)
    assert tables.keys() == fast_tables.keys()
    for name, table in tables.items():
        pd.testing.assert_frame_equal(table, fast_tables[name], check_exact=True, obj=name)
    assert len(fast_tables["sessions"]) > 300


@pytest.mark.req("PERF-5")
@pytest.mark.parametrize("path", FAST_PATHS, ids=[path.name for path in FAST_PATHS])
def test_referenced_puts_the_reference_in_place_and_then_the_fast_path_back(path: Any) -> None:
    before = [vars(owner)[name] for owner, name, _ in path.swaps]
    with referenced(path):
        for owner, name, reference in path.swaps:
            assert vars(owner)[name] is reference
    after = [vars(owner)[name] for owner, name, _ in path.swaps]
    assert after == before
    assert all(
        original is not reference
        for original, (_, _, reference) in zip(before, path.swaps, strict=True)
    )


@pytest.mark.req("PERF-5")
def test_the_fast_path_bench_judges_every_fast_path_at_a_tiny_scale() -> None:
    report = bench_fast_paths.run(0.01)
    assert report["rounds"] == 1 and set(report["fast_paths"]) == {p.name for p in FAST_PATHS}
    assert len(report["verdicts"]) == len(FAST_PATHS)
    assert all(v["goal"] == ">= 1%" for v in report["verdicts"])
