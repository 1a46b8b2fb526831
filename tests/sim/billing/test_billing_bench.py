"""The usage benchmark stays runnable, judges its goal and summarizes what a fresh ledger does
(no timing asserts)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "bench_usage.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_usage_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.req("SIM-5", "PERF-5")
def test_bench_usage_times_both_organizations_and_judges_the_ratio() -> None:
    report = _load().run(0.01, repeats=2)
    assert report["same_result"] is True
    small, large = report["org_small"], report["org_large"]
    assert 0 < small["usage_rows"] < large["usage_rows"]
    assert report["rows"] >= small["usage_rows"] + large["usage_rows"]
    assert small["median_seconds"] > 0 and large["median_seconds"] > 0
    [verdict] = report["verdicts"]
    assert verdict["goal"] == "<= 2.0x" and isinstance(verdict["met"], bool)
