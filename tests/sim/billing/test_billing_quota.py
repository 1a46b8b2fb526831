"""The Quota resource, session-start gating, the low-balance event and public plans."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sim.billing import LOW_BALANCE_EVENT, QUOTA_STATUSES
from sim.errors import QuotaExceeded

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
INTEGER_FIELDS = (
    "balance_credits",
    "included_balance_credits",
    "included_credits_limit",
    "included_credits_used",
    "rollover_balance_credits",
    "low_balance_threshold_credits",
)


@pytest.mark.req("RES-QUOTA-1", "EP-BILL-1")
@pytest.mark.parametrize("plan", ["free", "starter", "pro", "enterprise"])
def test_quota_has_every_seed_field_with_its_type(kit: Any, plan: str) -> None:
    world = kit.world()
    org = world.org(plan)
    world.kernel.clock.advance(86_400 * 3)
    quota = world.billing.quota(org)
    assert set(quota) == {
        *INTEGER_FIELDS,
        "can_start_session",
        "current_period_start",
        "current_period_end",
        "plan_key",
        "status",
    }
    for name in INTEGER_FIELDS:
        assert type(quota[name]) is int and quota[name] >= 0, name
    assert type(quota["can_start_session"]) is bool
    assert TIMESTAMP.match(quota["current_period_start"])
    assert TIMESTAMP.match(quota["current_period_end"])
    assert quota["plan_key"] == plan
    assert quota["status"] in QUOTA_STATUSES
    config = world.kernel.config.billing.plan(plan)
    assert quota["included_credits_limit"] == config.included_credits
    assert quota["low_balance_threshold_credits"] == config.low_balance_threshold_credits
    assert quota["balance_credits"] == config.included_credits + 20_000


@pytest.mark.req("RES-QUOTA-1", "SIM-5")
def test_status_and_can_start_session_follow_the_balance(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("free")  # 500 credits, threshold 200, minimum to start 60
    billing = world.billing
    assert (billing.quota(org)["status"], billing.quota(org)["can_start_session"]) == (
        "active",
        True,
    )
    billing.charge_session(kit.usage(world, org, "sess_1", 160))  # 320 -> 180 left
    assert billing.quota(org)["status"] == "low_balance"
    billing.ensure_can_start_session(org)
    billing.reserve_run(kit.run(org, "run_1"), 121)  # 59 available
    assert billing.quota(org)["can_start_session"] is False
    assert billing.quota(org)["balance_credits"] == 180  # a hold is not spent
    with pytest.raises(QuotaExceeded) as refused:
        billing.ensure_can_start_session(org)
    assert (refused.value.type, refused.value.code) == ("quota_exceeded", "insufficient_credits")
    billing.release_run("run_1")
    billing.ensure_can_start_session(org)
    billing.charge_session(kit.usage(world, org, "sess_2", 1_000))  # more than is left
    quota = billing.quota(org)
    assert (quota["status"], quota["balance_credits"], quota["can_start_session"]) == (
        "exhausted",
        0,
        False,
    )


@pytest.mark.req("RES-QUOTA-1", "SIM-5")
def test_low_balance_event_fires_once_per_downward_crossing(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("free")  # 500 credits, threshold 200
    billing = world.billing

    def fired() -> int:
        return len(world.kernel.events.of_type(LOW_BALANCE_EVENT))

    billing.charge_session(kit.usage(world, org, "s1", 50))  # 400: above
    assert fired() == 0
    billing.charge_session(kit.usage(world, org, "s2", 125))  # 150: crossed
    assert fired() == 1
    billing.charge_session(kit.usage(world, org, "s3", 5))  # 140: still below, no repeat
    billing.reserve_run(kit.run(org, "r1"), 100)
    billing.settle_run("r1", 100)  # 40
    assert fired() == 1
    billing.refund(org, 300, note="goodwill")  # 340: above again, re-armed
    assert fired() == 1
    billing.charge_session(kit.usage(world, org, "s4", 100))  # 140: second crossing
    assert fired() == 2
    event = world.kernel.events.of_type(LOW_BALANCE_EVENT)[-1]
    assert event.org_id == org
    assert event.data["object"]["balance_credits"] == 140
    assert event.data["object"]["status"] == "low_balance"


@pytest.mark.req("RES-QUOTA-1")
def test_a_period_boundary_that_ends_above_the_threshold_emits_nothing(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("nocap")  # 500 granted + 700 included, threshold 100
    world.billing.charge_session(kit.usage(world, org, "s1", 550))  # 100 left, not below
    world.at(kit.utc(2026, 2, 1))  # 700 expire and 700 arrive: never below in the end
    assert world.kernel.events.of_type(LOW_BALANCE_EVENT) == []


@pytest.mark.req("EP-BILL-1", "SIM-6")
def test_plans_list_every_configured_plan_with_the_public_columns(kit: Any) -> None:
    world = kit.world()
    body = world.billing.plans()
    assert body["object"] == "list"
    assert [p["key"] for p in body["data"]] == ["free", "starter", "pro", "enterprise"]
    for rendered, plan in zip(body["data"], world.kernel.config.billing.plans, strict=True):
        assert rendered == {
            "key": plan.key,
            "name": plan.name,
            "price_usd_month": plan.price_usd_month,
            "included_credits": plan.included_credits,
            "rollover_cap_credits": plan.rollover_cap_credits,
            "max_session_duration_seconds": plan.max_session_duration_seconds,
            "concurrent_sessions": plan.concurrent_sessions,
            "low_balance_threshold_credits": plan.low_balance_threshold_credits,
            "run_deletion": plan.run_deletion,
        }
    assert [p["run_deletion"] for p in body["data"]] == [False, False, False, True]
    assert body["data"][3]["price_usd_month"] is None
    custom = kit.world(kit.small_config()).billing.plans()
    assert [p["key"] for p in custom["data"]] == ["free", "capped", "nocap"]
