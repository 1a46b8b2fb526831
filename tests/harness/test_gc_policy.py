"""The harness's collector policy: rare cycle collections inside a block, the process's own
threshold back afterwards (``harness.gc_policy``), for simulating and for collecting tables."""

from __future__ import annotations

import gc
from typing import Any

import pytest

import harness.collect as collect_module
from harness.collect import collect
from harness.gc_policy import YOUNG_COLLECTION_THRESHOLD, rare_collections
from harness.runner import simulate
from harness.scenarios import parse_scenario
from tests.scenarios.helpers import small


def test_the_threshold_is_raised_inside_the_block_and_restored_also_on_error() -> None:
    before = gc.get_threshold()
    with rare_collections():
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(ValueError, match="inside"), rare_collections():
        raise ValueError("inside")
    assert gc.get_threshold() == before


def test_collect_builds_its_tables_with_rare_collections_and_the_same_tables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Collecting a run's tables raises the threshold while the tables are built (the events
    table is the largest), restores it after, also when a table fails, and what it builds does
    not depend on when garbage goes."""
    raw = simulate(parse_scenario(small()))
    plain = collect(raw)
    before = gc.get_threshold()
    seen: list[tuple[int, int, int]] = []
    build_events = collect_module._events

    def events(run: Any) -> Any:
        seen.append(gc.get_threshold())
        return build_events(run)

    monkeypatch.setattr(collect_module, "_events", events)
    again = collect(raw)
    assert seen == [(YOUNG_COLLECTION_THRESHOLD, *before[1:])]
    assert gc.get_threshold() == before
    for name in ("sessions", "events", "ledger", "api_calls", "clients", "intervals"):
        assert getattr(again, name).equals(getattr(plain, name)), name

    def failing(run: Any) -> Any:
        raise RuntimeError("table failed")

    monkeypatch.setattr(collect_module, "_events", failing)
    with pytest.raises(RuntimeError, match="table failed"):
        collect(raw)
    assert gc.get_threshold() == before
