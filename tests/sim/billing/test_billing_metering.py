"""Metering from the config: the signup grant, per-second session prices, runs (GAP-BILL-1, -4)."""

from __future__ import annotations

from typing import Any

import pytest

from sim.billing import LedgerEntry
from sim.config import BillingConfig, SimConfig
from sim.errors import InternalError, QuotaExceeded


def _charges(entries: list[LedgerEntry]) -> list[LedgerEntry]:
    return [e for e in entries if e.kind == "charge"]


@pytest.mark.req("LIM-8", "SIM-6")
def test_signup_grant_is_twenty_dollars_of_credits_granted_once(kit: Any) -> None:
    world = kit.world()
    config = world.kernel.config.billing
    org = world.org("free")
    grants = [e for e in world.billing.entries(org) if e.kind == "grant"]
    assert [e.credits for e in grants] == [20_000]
    assert grants[0].credits * config.usd_per_credit == pytest.approx(config.signup_grant_usd)
    world.billing.open_account(org, "free")  # a second signup changes nothing
    world.kernel.clock.advance(400 * 86_400)  # more than a year of periods
    grants = [e for e in world.billing.entries(org) if e.kind == "grant"]
    assert [e.credits for e in grants] == [20_000]  # free plan: no included credits, no renewal
    assert world.billing.balance(org) == 20_000


@pytest.mark.req("SIM-6", "LIM-8")
def test_grant_follows_the_configured_usd_rate(kit: Any) -> None:
    world = kit.world(SimConfig(billing=BillingConfig(signup_grant_usd=5, usd_per_credit=0.01)))
    assert world.billing.balance(world.org("free")) == 500


@pytest.mark.req("SIM-5", "SIM-6", "RES-SESS-7")
@pytest.mark.parametrize(
    ("quality", "multiplier"), [("mock", 0), ("lite", 1), ("standard", 2), ("pro", 4)]
)
def test_session_is_per_second_times_quality_multiplier(
    kit: Any, quality: str, multiplier: int
) -> None:
    world = kit.world()
    org = world.org("free")
    world.kernel.clock.advance(100)
    world.billing.charge_session(kit.usage(world, org, "sess_a", 37, quality=quality))
    (charge,) = _charges(world.billing.entries(org))
    assert charge.credits == 37 * multiplier
    assert charge.billable_seconds == 37
    assert (charge.operation, charge.model, charge.internal) == ("session.realtime", None, False)
    assert charge.speech_billing_mode == "customer_managed"
    assert charge.at == world.now
    assert world.billing.balance(org) == 20_000 - 37 * multiplier


@pytest.mark.req("SIM-6", "SIM-5")
def test_prices_come_from_the_config(kit: Any) -> None:
    multipliers = {"mock": 1, "lite": 2, "standard": 5, "pro": 7}
    billing = BillingConfig(session_credits_per_second=3, quality_multipliers=multipliers)
    config = SimConfig(billing=billing)
    world = kit.world(config)
    org = world.org("free")
    world.billing.charge_session(kit.usage(world, org, "sess_a", 10, quality="standard"))
    assert world.billing.balance(org) == 20_000 - 10 * 3 * 5


@pytest.mark.req("SIM-5", "RES-SESS-7")
@pytest.mark.parametrize("surface", ["playground", "embed", "share", "public_demo"])
def test_platform_managed_speech_adds_the_internal_model(kit: Any, surface: str) -> None:
    world = kit.world()
    org = world.org("free")
    world.billing.charge_session(
        kit.usage(world, org, "sess_a", 50, quality="lite", surface=surface)
    )
    realtime, speech = _charges(world.billing.entries(org))
    assert realtime.credits == 50 and realtime.billable_seconds == 50
    assert speech.credits == 50 and speech.billable_seconds == 0  # seconds are counted once
    assert (speech.model, speech.internal, speech.operation) == (
        world.kernel.config.billing.platform_speech_model,
        True,
        "session.speech",
    )
    assert {realtime.speech_billing_mode, speech.speech_billing_mode} == {"platform_managed"}


@pytest.mark.req("SIM-4", "SIM-5")
def test_a_replayed_usage_event_is_never_charged_twice(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    usage = kit.usage(world, org, "sess_a", 120, surface="embed", embed_id="emb_1")
    for _ in range(3):
        world.billing.charge_session(usage)
        world.kernel.clock.advance(5)
    assert len(_charges(world.billing.entries(org))) == 2
    assert world.billing.balance(org) == 20_000 - 120 * 2 - 120


@pytest.mark.req("SIM-5")
def test_a_session_without_billable_seconds_costs_nothing(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    world.billing.charge_session(kit.usage(world, org, "sess_canceled", 0))
    assert _charges(world.billing.entries(org)) == []
    assert world.billing.usage(org)["sessions"] == 0


@pytest.mark.req("SIM-5")
def test_a_charge_cannot_be_dated_in_the_future(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    usage = kit.usage(world, org, "sess_a", 5)
    with pytest.raises(ValueError, match="ends"):
        world.billing.charge_session(usage._replace(ended_at=world.now + 1))


@pytest.mark.req("EP-RUN-4", "SIM-5")
def test_run_reserve_settle_charges_at_most_the_reservation(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    billing = world.billing
    billing.reserve_run(kit.run(org, "run_1"), 1_000)
    assert billing.balance(org) == 20_000  # a hold is not a charge
    assert billing.balances(org).available == 19_000
    world.kernel.clock.advance(30)
    billing.settle_run("run_1", 5_000)  # more than reserved: clamped
    kinds = [(e.kind, e.credits) for e in billing.ledger.run_rows("run_1")]
    assert kinds == [("reservation", 1_000), ("settlement", 1_000)]
    assert billing.balance(org) == 19_000
    billing.settle_run("run_1", 1_000)  # a retried settlement adds nothing
    billing.release_run("run_1")  # nor does a late release
    assert len(billing.ledger.run_rows("run_1")) == 2
    assert billing.balances(org).held == 0


@pytest.mark.req("EP-RUN-4", "SIM-5")
def test_settling_less_releases_the_rest_and_release_gives_everything_back(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    billing = world.billing
    billing.reserve_run(kit.run(org, "run_1"), 900)
    billing.reserve_run(kit.run(org, "run_1"), 900)  # a repeat holds nothing more
    video = kit.run(
        org, "run_2", model="sim/portrait-video", operation="animate", surface="video_generation"
    )
    billing.reserve_run(video, 400)
    assert billing.balances(org).held == 1_300
    billing.settle_run("run_1", 250)
    billing.release_run("run_2")
    rows = [(e.run_id, e.kind, e.credits) for e in billing.entries(org) if e.run_id]
    assert rows == [
        ("run_1", "reservation", 900),
        ("run_2", "reservation", 400),
        ("run_1", "settlement", 250),
        ("run_1", "release", 650),
        ("run_2", "release", 400),
    ]
    assert billing.balance(org) == 20_000 - 250
    assert billing.balances(org).held == 0
    settlement = billing.ledger.run_rows("run_1")[1]
    assert (settlement.model, settlement.operation, settlement.pricing_version) == (
        "sim/speech",
        "run.sim/speech.synthesize",
        "2026-01",
    )


@pytest.mark.req("EP-RUN-4")
def test_a_reservation_the_available_balance_cannot_cover_is_refused(kit: Any) -> None:
    world = kit.world()
    org = world.org("free")
    world.billing.reserve_run(kit.run(org, "run_1"), 15_000)
    with pytest.raises(QuotaExceeded) as refused:
        world.billing.reserve_run(kit.run(org, "run_2"), 5_001)  # 20 000 - 15 000 held
    assert (refused.value.type, refused.value.code) == ("quota_exceeded", "insufficient_credits")
    assert world.billing.ledger.run_rows("run_2") == ()
    world.billing.reserve_run(kit.run(org, "run_3"), 5_000)  # exactly the available balance


@pytest.mark.req("SIM-5")
def test_settling_an_unknown_run_is_a_bug_not_a_silent_no_op(kit: Any) -> None:
    world = kit.world()
    world.org("free")
    with pytest.raises(InternalError):
        world.billing.settle_run("run_missing", 1)
    with pytest.raises(ValueError, match="non-negative"):
        world.billing.settle_run("run_missing", -1)


@pytest.mark.req("SIM-5")
def test_a_session_charge_never_eats_credits_held_for_runs(kit: Any) -> None:
    world = kit.world(kit.small_config())
    org = world.org("free")  # 500 credits
    world.billing.reserve_run(kit.run(org, "run_1"), 400)
    world.billing.charge_session(kit.usage(world, org, "sess_a", 100, quality="standard"))
    (charge,) = _charges(world.billing.entries(org))
    assert charge.credits == 200 and charge.overage == 100  # only 100 were free
    world.billing.settle_run("run_1", 400)
    settlement = world.billing.ledger.run_rows("run_1")[1]
    assert settlement.overage == 0  # the hold paid for the run
    assert world.billing.balance(org) == 0
