"""The runner's bound weighted pick draws what ``Random.choices`` draws (SIM-2).

Every arrival picks an organization, a quality and a surface with ``WeightedPick``; it must take
the very draws ``rng.choices(values, weights)`` takes from the same stream, or the same seed
would give another run.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.runner.picks import WeightedPick


@pytest.mark.req("SIM-2")
@given(
    weights=st.lists(
        st.floats(min_value=0.0, max_value=1e6, allow_nan=False) | st.integers(0, 1000),
        min_size=1,
        max_size=8,
    ).filter(lambda ws: sum(ws) > 0),
    seed=st.integers(0, 2**32),
)
def test_a_bound_pick_draws_what_random_choices_draws(weights: list[float], seed: int) -> None:
    values = [f"v{i}" for i in range(len(weights))]
    general, bound = random.Random(seed), random.Random(seed)
    pick = WeightedPick(values, weights, bound)
    assert [pick() for _ in range(200)] == [
        general.choices(values, weights=weights)[0] for _ in range(200)
    ]
    assert general.random() == bound.random()  # the streams are left in the same state


def test_weights_that_cannot_be_drawn_are_refused() -> None:
    for values, weights in ((["a"], [0.0]), (["a", "b"], [1.0]), ([], [])):
        with pytest.raises(ValueError, match="weight"):
            WeightedPick(values, weights, random.Random(1))
