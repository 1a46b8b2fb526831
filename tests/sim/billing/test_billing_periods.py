"""Calendar-month periods: included credits, rollover up to the cap, expiry (GAP-BILL-2)."""

from __future__ import annotations

from typing import Any

import pytest

from sim.billing import Month


def _rows(world: Any, org: str, since: float) -> list[tuple[str, int, float]]:
    return [(e.kind, e.credits, e.at) for e in world.billing.entries(org) if e.at >= since]


@pytest.mark.req("SIM-5")
def test_rollover_caps_expire_and_renew_at_each_month_boundary(kit: Any) -> None:
    world = kit.world(kit.small_config())
    clock = world.kernel.clock
    world.at(kit.utc(2026, 1, 10))
    org = world.org("capped")  # 500 granted + 1 000 included
    world.billing.charge_session(kit.usage(world, org, "sess_jan", 300))  # 600 credits
    feb = clock.seconds_at(kit.utc(2026, 2, 1))
    mar = clock.seconds_at(kit.utc(2026, 3, 1))
    world.at(kit.utc(2026, 2, 15))
    # unused included 400: 300 roll over (cap), 100 expire, then February's 1 000 arrive
    assert _rows(world, org, feb) == [
        ("rollover", 300, feb),
        ("expiry", 100, feb),
        ("grant", 1_000, feb),
    ]
    b = world.billing.balances(org)
    assert (b.rollover, b.included, b.granted) == (300, 1_000, 500)
    world.billing.charge_session(kit.usage(world, org, "sess_feb", 250))  # 500: rollover first
    b = world.billing.balances(org)
    assert (b.rollover, b.included, b.granted) == (0, 800, 500)
    world.at(kit.utc(2026, 3, 2))
    assert _rows(world, org, mar) == [
        ("rollover", 300, mar),
        ("expiry", 500, mar),
        ("grant", 1_000, mar),
    ]
    world.at(kit.utc(2026, 4, 1))
    apr = clock.seconds_at(kit.utc(2026, 4, 1))
    # March's rollover had its month and expires; March's unused included rolls (capped)
    assert _rows(world, org, apr) == [
        ("expiry", 300, apr),
        ("rollover", 300, apr),
        ("expiry", 700, apr),
        ("grant", 1_000, apr),
    ]
    quota = world.billing.quota(org)
    assert quota["rollover_balance_credits"] == 300
    assert quota["included_balance_credits"] == 1_000
    assert quota["balance_credits"] == 1_800
    assert quota["current_period_start"] == "2026-04-01T00:00:00.000Z"
    assert quota["current_period_end"] == "2026-05-01T00:00:00.000Z"


@pytest.mark.req("SIM-5")
def test_a_plan_without_rollover_expires_all_unused_included_credits(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("nocap")
    world.at(kit.utc(2026, 2, 1))
    feb = world.kernel.clock.seconds_at(kit.utc(2026, 2, 1))
    assert _rows(world, org, feb) == [("expiry", 700, feb), ("grant", 700, feb)]
    assert world.billing.balance(org) == 500 + 700


@pytest.mark.req("SIM-5")
def test_spending_order_is_rollover_then_included_then_granted(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("capped")
    world.at(kit.utc(2026, 2, 3))  # 300 rollover, 1 000 included, 500 granted
    world.billing.charge_session(kit.usage(world, org, "sess_a", 750))  # 1 500 credits
    charge = next(e for e in world.billing.entries(org) if e.kind == "charge")
    assert (charge.rollover_delta, charge.included_delta, charge.granted_delta) == (
        -300,
        -1_000,
        -200,
    )
    assert world.billing.quota(org)["included_credits_used"] == 1_000


@pytest.mark.req("SIM-5")
def test_periods_close_with_one_wake_up_per_month_for_all_organizations(kit: Any) -> None:
    world = kit.world(kit.small_config())
    orgs = [world.org("capped", name=f"org{i}") for i in range(40)]
    clock = world.kernel.clock
    end = clock.seconds_at(kit.utc(2027, 1, 1))
    steps = 0
    while (due := clock.next_event_at()) is not None and due <= end:
        clock.step()
        steps += 1
    assert steps <= 13  # twelve boundaries (plus the process start), not 40 x 12 or per day
    jan27 = world.kernel.clock.seconds_at(kit.utc(2027, 1, 1))
    for org in orgs:
        assert [e.kind for e in world.billing.entries(org) if e.at == jan27] == [
            "expiry",
            "rollover",
            "expiry",
            "grant",
        ]


@pytest.mark.req("SIM-5")
def test_an_organization_never_opened_is_opened_as_of_its_creation(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.accounts.create_organization("late", "nocap").id  # billing not told
    world.kernel.clock.advance(70 * 86_400)  # into March
    quota = world.billing.quota(org)
    assert quota["current_period_start"] == "2026-03-01T00:00:00.000Z"
    grants = [(e.credits, e.at) for e in world.billing.entries(org) if e.kind == "grant"]
    clock = world.kernel.clock
    assert grants == [
        (500, 0.0),
        (700, 0.0),
        (700, clock.seconds_at(kit.utc(2026, 2, 1))),
        (700, clock.seconds_at(kit.utc(2026, 3, 1))),
    ]


@pytest.mark.req("SIM-5")
def test_stepping_event_by_event_and_advancing_close_the_same_periods(kit: Any) -> None:
    driven = kit.world(kit.small_config())
    org_a = driven.org("capped")
    clock = driven.kernel.clock
    until = clock.seconds_at(kit.utc(2026, 5, 5))
    while (due := clock.next_event_at()) is not None and due < until:
        clock.step()
    lazy = kit.world(kit.small_config())
    org_b = lazy.org("capped")
    lazy.billing.roll_periods()
    lazy.kernel.clock.advance_to(lazy.kernel.clock.seconds_at(kit.utc(2026, 5, 5)))
    assert driven.billing.quota(org_a) == lazy.billing.quota(org_b)
    assert [(e.kind, e.credits, e.at) for e in driven.billing.entries(org_a)] == [
        (e.kind, e.credits, e.at) for e in lazy.billing.entries(org_b)
    ]


@pytest.mark.req("SIM-5")
@pytest.mark.parametrize(
    ("year", "month", "previous", "following"),
    [
        (2026, 1, (2025, 12), (2026, 2)),
        (2026, 12, (2026, 11), (2027, 1)),
        (2028, 2, (2028, 1), (2028, 3)),
    ],
)
def test_month_arithmetic_crosses_years(
    kit: Any, year: int, month: int, previous: tuple[int, int], following: tuple[int, int]
) -> None:
    m = Month(year, month)
    assert (m.previous().year, m.previous().month) == previous
    assert (m.next().year, m.next().month) == following
    clock = kit.world().kernel.clock
    assert Month.containing(clock, m.start(clock)) == m
    assert Month.containing(clock, m.end(clock) - 0.001) == m
    assert m.end(clock) == m.next().start(clock)
