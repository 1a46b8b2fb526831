"""Billing keeps running totals and each organization's next period boundary (PERF-4, SIM-5).

The balances are the ledger's running totals, equal to a fold over the rows at every step; a
charge inside a period does no calendar arithmetic and reads no row it did not write.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.billing import Balances
from sim.billing.periods import Month


@pytest.mark.req("PERF-4", "SIM-5")
@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.sampled_from(["charge", "reserve", "settle", "release", "refund", "advance"]),
            st.integers(1, 4_000),
        ),
        max_size=40,
    )
)
def test_running_totals_are_the_fold_of_the_rows(kit: Any, steps: list[tuple[str, int]]) -> None:
    world = kit.world(kit.small_config())
    orgs = [world.org("capped", "a"), world.org("nocap", "b")]
    runs: list[str] = []
    for index, (action, amount) in enumerate(steps):
        org = orgs[index % 2]
        if action == "charge":
            usage = kit.usage(world, org, f"sess_{index}", amount % 300, quality="pro")
            world.billing.charge_session(usage)
        elif action == "reserve":
            try:
                world.billing.reserve_run(kit.run(org, f"run_{index}"), amount % 500)
            except Exception:  # insufficient credits: nothing is written
                continue
            runs.append(f"run_{index}")
        elif action in ("settle", "release") and runs:
            run = runs.pop(0)
            if action == "settle":
                world.billing.settle_run(run, amount % 600)
            else:
                world.billing.release_run(run)
        elif action == "refund":
            world.billing.refund(org, amount % 100)
        else:
            world.kernel.clock.advance(amount * 1_000.0)  # crosses month boundaries too
        for each in orgs:
            rows = world.billing.ledger.appended(each)
            assert world.billing.balances(each) == Balances.fold(rows)


@pytest.mark.req("PERF-4", "SIM-5")
def test_charges_inside_a_period_do_no_calendar_arithmetic(
    kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = kit.world()
    org = world.org("pro")
    world.kernel.clock.advance(1)  # the monthly process has computed its first boundary
    ends: list[Month] = []
    original = Month.end

    def counted(self: Month, clock: Any) -> float:
        ends.append(self)
        return original(self, clock)

    monkeypatch.setattr(Month, "end", counted)
    for index in range(200):
        world.kernel.clock.advance(60)
        world.billing.ensure_can_start_session(org)
        world.billing.charge_session(kit.usage(world, org, f"sess_{index}", 30))
    assert ends == []  # the open period's end is known; nothing recomputes it
    world.kernel.clock.advance(40 * 86_400)  # a boundary passes: the period rolls once
    world.billing.balance(org)
    assert len(ends) >= 1
