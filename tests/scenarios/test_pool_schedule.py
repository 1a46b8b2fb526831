"""A scenario's planned pool sizes (``pool_schedule``) and faults on one timeline (PLAN-5), and
a run that simulates a window of a scenario (``arrivals_from``, PLAN-1)."""

from __future__ import annotations

import pytest

from harness.runner import run_scenario, simulate
from harness.runner.faults import pool_timeline
from harness.runner.tables import collect
from harness.scenarios import CapacityLoss, PoolChange, ScenarioError, parse_scenario
from tests.scenarios.helpers import small


@pytest.mark.req("PLAN-5")
def test_the_schedule_sets_the_size_and_a_fault_overrides_it_while_it_lasts() -> None:
    schedule = (PoolChange(at=0, workers=5), PoolChange(at=600, workers=8),
                PoolChange(at=1200, workers=3))  # fmt: skip
    faults = (CapacityLoss(at=500, workers=2, until=700),)
    assert pool_timeline(faults, 10, schedule) == [
        (0, 5), (500, 2), (700, 8), (1200, 3),
    ]  # fmt: skip
    # Overlapping faults: the one that began last, then the other until it ends.
    overlapping = (CapacityLoss(at=100, workers=4, until=400), CapacityLoss(at=200, workers=1,
                   until=300))  # fmt: skip
    assert pool_timeline(overlapping, 10) == [(100, 4), (200, 1), (300, 4), (400, 10)]
    assert pool_timeline((), 10) == []


@pytest.mark.req("PLAN-5")
def test_a_run_follows_its_pool_schedule() -> None:
    data = small(
        duration="20m",
        cooldown=0,
        runs=[],
        pool_schedule=[{"at": 0, "workers": 2}, {"at": "10m", "workers": 6}],
        arrivals=[{"kind": "poisson", "rate_per_hour": 6}],
        sessions={"length": {"kind": "constant", "value": 30}},
    )
    result = run_scenario(parse_scenario(data))
    util = result.utilization.set_index("t")
    assert util.loc[0.0:540.0, "capacity"].eq(2).all()
    assert util.loc[600.0:, "capacity"].eq(6).all()
    # Sessions are short and few: workers are idle when the pool shrinks or grows, so the pool's
    # worker-seconds are exactly its planned size times the time.
    assert util["worker_seconds"].sum() == pytest.approx(2 * 600 + 6 * 600)


@pytest.mark.req("PLAN-5")
def test_a_schedule_out_of_order_or_past_the_run_is_refused() -> None:
    data = small(pool_schedule=[{"at": "10m", "workers": 2}, {"at": "5m", "workers": 3},
                                {"at": "2h", "workers": 1}])  # fmt: skip
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    assert "pool_schedule[1].at: must be after the previous change" in info.value.problems
    assert any(
        p.startswith("pool_schedule[2].at: is not before the end") for p in info.value.problems
    )


@pytest.mark.req("PLAN-1")
def test_a_window_run_leaves_the_arrivals_before_it_out_and_keeps_the_others() -> None:
    scenario = parse_scenario(small(duration="30m", runs=[{"model": "sim/echo-text",
                                                           "rate_per_hour": 60}]))  # fmt: skip
    whole = collect(simulate(scenario))
    window = collect(simulate(scenario, arrivals_from=600.0))
    assert window.clients["t"].min() >= 600.0
    kept = whole.clients[whole.clients["t"] >= 600.0]
    assert sorted(window.clients["t"]) == sorted(kept["t"])  # the same instants, none moved
    assert set(window.clients["kind"]) == {"session", "run"}
    assert window.intervals.loc[window.intervals["t"] < 600, "sessions_created"].sum() == 0
