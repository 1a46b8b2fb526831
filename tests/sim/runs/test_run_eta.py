"""``eta``: honest remaining time, and absent exactly when no honest figure exists.

(RES-RUN-2, RES-RUN-5, GAP-RUN-9)
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import ModelConfig
from sim.distributions import Constant, Distribution, Exponential, LogNormal, Uniform
from sim.rng import sample
from sim.runs.eta import remaining_quantile, remaining_time

if TYPE_CHECKING:
    from conftest import World

DISTRIBUTIONS: list[Distribution] = [
    LogNormal(median=4.0, sigma=0.35, cap=60.0),
    LogNormal(median=4.0, sigma=0.6, cap=6.0),  # the cap binds often
    Exponential(mean=5.0),
    Uniform(low=2.0, high=12.0),
    Constant(value=7.0),
]


def _empirical(draws: list[float], q: float) -> float:
    ordered = sorted(draws)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.req("RES-RUN-2")
@pytest.mark.parametrize("dist", DISTRIBUTIONS, ids=lambda d: d.kind)
@pytest.mark.parametrize("elapsed", [0.0, 2.5, 5.0])
def test_quantiles_match_the_conditional_distribution_of_the_sampled_durations(
    dist: Distribution, elapsed: float
) -> None:
    rng = random.Random(1234)
    durations = [sample(dist, rng) for _ in range(40_000)]
    remaining = [d - elapsed for d in durations if d > elapsed]
    if len(remaining) < 2_000:
        pytest.skip("too few survivors for a stable empirical quantile")
    for q in (0.5, 0.95):
        expected = _empirical(remaining, q)
        computed = remaining_quantile(dist, elapsed, q)
        assert computed is not None
        assert computed == pytest.approx(expected, rel=0.05, abs=0.05)


@pytest.mark.req("RES-RUN-2")
@settings(max_examples=60, deadline=None)
@given(
    median=st.floats(0.5, 100.0),
    sigma=st.floats(0.0, 1.5),
    elapsed=st.floats(0.0, 500.0),
    cap=st.one_of(st.none(), st.floats(1.0, 1000.0)),
)
def test_estimates_are_ordered_non_negative_and_within_the_cap(
    median: float, sigma: float, elapsed: float, cap: float | None
) -> None:
    dist = LogNormal(median=median, sigma=sigma, cap=cap)
    eta = remaining_time(dist, elapsed)
    if eta is None:
        # only a time that no draw of the distribution reaches in practice has no figure
        assert sigma > 0 and math.log(elapsed / median) / sigma > 30
        return
    assert 0.0 <= eta.p50_seconds <= eta.p95_seconds
    if cap is not None:
        assert elapsed + eta.p95_seconds <= max(cap, elapsed) + 1e-3
    assert eta.source == "model_distribution"


@pytest.mark.req("RES-RUN-2")
def test_no_estimate_far_beyond_an_uncapped_distribution() -> None:
    assert remaining_time(LogNormal(median=1.0, sigma=0.1), 1e6) is None
    assert remaining_time(LogNormal(median=1.0, sigma=0.1, cap=3.0), 1e6) is not None


def _honest(body: dict[str, Any]) -> bool:
    """When GAP-RUN-9 says an estimate exists: running, or queued holding a slot."""
    if "deleted_at" in body:
        return False
    return body["status"] == "running" or (
        body["status"] == "queued" and "capacity_wait" not in body
    )


@pytest.mark.req("RES-RUN-2", "RES-RUN-5")
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    workers=st.integers(0, 3),
    steps=st.lists(
        st.tuples(st.sampled_from(["create", "cancel", "advance"]), st.floats(0.0, 20.0)),
        min_size=1,
        max_size=15,
    ),
)
def test_eta_is_present_exactly_when_an_honest_estimate_exists(
    make_world: Callable[..., World], seed: int, workers: int, steps: list[tuple[str, float]]
) -> None:
    world = make_world(seed=seed, run_workers=workers, capacity_wait_seconds=15.0)
    ids: list[str] = []
    for action, amount in steps:
        if action == "create":
            ids.append(world.speech()["id"])
        elif action == "cancel" and ids:
            run_id = ids[int(amount) % len(ids)]
            if world.runs.status(world.alice, run_id)["status"] in ("queued", "running"):
                world.runs.cancel(world.alice, run_id)
        else:
            world.advance(amount)
        for run_id in ids:
            body = world.runs.retrieve(world.alice, run_id)
            status = world.runs.status(world.alice, run_id)
            assert ("eta" in body) == _honest(body)
            assert status.get("eta") == body.get("eta")
            assert ("capacity_wait" in status) == ("capacity_wait" in body)


@pytest.mark.req("RES-RUN-2")
def test_a_running_eta_is_conditioned_on_the_time_already_spent(
    make_world: Callable[..., World],
) -> None:
    dist = LogNormal(median=4.0, sigma=0.35, cap=60.0)
    world = make_world(models={"sim/speech": ModelConfig(duration=dist)}, progress_updates=0)
    created = world.speech()
    assert created["eta"] == remaining_time(dist, 0.0).to_resource()  # type: ignore[union-attr]
    world.advance(0.0)
    world.advance(1.5)
    body = world.runs.retrieve(world.alice, created["id"])
    assert body["status"] == "running"  # this seed draws a duration above 1.5 s
    expected = remaining_time(dist, 1.5)
    assert expected is not None
    assert body["eta"] == expected.to_resource()
    assert expected.p50_seconds < created["eta"]["p50_seconds"]
    world.advance(100)
    assert "eta" not in world.runs.retrieve(world.alice, created["id"])


@pytest.mark.req("RES-RUN-2")
def test_no_estimate_when_the_tail_underflows_only_after_scaling() -> None:
    # The survival at this elapsed time is a subnormal float (> 0) but survival * (1 - q)
    # underflows to 0: there is no honest p95, so no eta at all (found by hypothesis).
    dist = LogNormal(median=1.0, sigma=1.0)
    elapsed = math.exp(38.4375)
    assert remaining_time(dist, elapsed) is None
