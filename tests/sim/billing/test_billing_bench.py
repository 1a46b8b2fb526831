"""The usage benchmark stays runnable and its two ways of summarizing agree (no timing asserts)."""

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


@pytest.mark.req("SIM-5")
def test_bench_usage_indexed_summary_equals_the_full_scan() -> None:
    report = _load().run(0.005, repeats=1)
    assert report["same_result"] is True
    assert report["entries"] >= 5_000
    assert 0 < report["org_entries_in_window"] < report["entries"]
    assert report["ratio_scan_over_indexed"] is not None
