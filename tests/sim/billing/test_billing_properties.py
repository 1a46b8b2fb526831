"""Property tests over generated billing histories (SIM-5, RES-USAGE-1..3, RES-QUOTA-1).

A history mixes sessions (some replayed, some crashed mid-run with their partial seconds, some
canceled before the first frame), run reservations that are settled, released, retried or left
open, refunds and waits that cross month boundaries. An independent model of the rules of
GAP-BILL-2..4 runs beside the service; after every history the ledger must agree with it, and
every usage summary must equal a recomputation from the raw rows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.billing import LOW_BALANCE_EVENT, Balances
from sim.config import BILLING_SURFACES, QUALITIES
from sim.errors import QuotaExceeded

PLANS = ("free", "capped", "nocap")  # of the small config: see conftest
ZONES = (
    "UTC",
    "America/New_York",
    "Europe/Berlin",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Pacific/Chatham",
    "America/St_Johns",
    "Africa/Casablanca",
)

ops = st.one_of(
    st.tuples(st.just("wait"), st.integers(1, 14 * 86_400)),
    st.tuples(
        st.just("session"),
        st.integers(0, 2),
        st.sampled_from(QUALITIES),
        st.sampled_from(BILLING_SURFACES),
        st.integers(0, 400),
    ),
    st.tuples(st.just("replay"), st.integers(0, 50)),
    st.tuples(st.just("reserve"), st.integers(0, 2), st.integers(0, 700), st.booleans()),
    st.tuples(st.just("settle"), st.integers(0, 50), st.integers(0, 900)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("refund"), st.integers(0, 2), st.integers(1, 300)),
)


@dataclass
class Model:
    """The rules, restated independently: pools, holds, periods, low-balance crossings."""

    plan: Any
    grant: int
    rollover: int = 0
    included: int = 0
    granted: int = 0
    holds: dict[str, int] = field(default_factory=dict)
    crossings: int = 0

    @property
    def total(self) -> int:
        return self.rollover + self.included + self.granted

    def _watch(self, before: int) -> None:
        threshold = self.plan.low_balance_threshold_credits
        if before >= threshold > self.total:
            self.crossings += 1

    def debit(self, credits: int, coverable: int) -> None:
        before = self.total
        take = max(0, min(credits, coverable))
        for pool in ("rollover", "included", "granted"):
            step = min(take, getattr(self, pool))
            setattr(self, pool, getattr(self, pool) - step)
            take -= step
        self._watch(before)

    def close_period(self) -> None:
        before = self.total
        # the old rollover expires; unused included credits roll over up to the cap
        self.rollover = min(self.included, self.plan.rollover_cap_credits)
        self.included = self.plan.included_credits
        self._watch(before)


def _months_between(start: datetime, end: datetime) -> int:
    return (end.year - start.year) * 12 + end.month - start.month


def _naive_summary(
    entries: list[Any], org: str, start: float, end: float, zone: str, epoch: datetime, limit: int
) -> dict[str, Any]:
    """Every figure of the summary, recomputed by brute force from the raw rows."""
    rows = [
        e
        for e in entries
        if e.org_id == org and e.kind in ("charge", "settlement") and start <= e.at < end
    ]
    session_rows = [e for e in rows if e.kind == "charge" and e.session_id]

    def total(pred: Any, key: Any, value: Any = lambda e: e.credits) -> dict[str, int]:
        out: Counter[str] = Counter()
        for e in rows:
            if pred(e):
                out[key(e)] += value(e)
        return dict(sorted(out.items()))

    def day(e: Any) -> str:
        instant = epoch + timedelta(seconds=e.at)
        return instant.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d")

    daily: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for e in rows:
        daily[day(e)][e.billing_surface] += e.credits
    modes = {"customer_managed": 0, "platform_managed": 0}
    for e in rows:
        modes[e.speech_billing_mode] += e.credits
    settled = sorted((e for e in rows if e.kind == "settlement"), key=lambda e: -e.seq)

    def stamp(at: float) -> str:
        return (epoch + timedelta(seconds=at)).isoformat(timespec="milliseconds")[:-6] + "Z"

    def recent(studio: bool) -> list[dict[str, Any]]:
        chosen = [e for e in settled if (e.billing_surface == "video_generation") == studio]
        return [
            {"credits": e.credits, "settled_at": stamp(e.at), "run_id": e.run_id, "model": e.model}
            for e in chosen[:limit]
        ]

    embeds: defaultdict[str, list[Any]] = defaultdict(list)
    for e in rows:
        if e.embed_id:
            embeds[e.embed_id].append(e)
    embed_rows = [
        {
            "embed_id": k,
            "avatar_id": v[-1].avatar_id,
            "credits": sum(e.credits for e in v),
            "billable_seconds": sum(e.billable_seconds for e in v),
            "last_used_at": stamp(max(e.at for e in v)),
        }
        for k, v in embeds.items()
    ]
    embed_rows.sort(key=lambda r: r["embed_id"])  # stable sorts, least significant key first
    embed_rows.sort(key=lambda r: r["last_used_at"], reverse=True)
    embed_rows.sort(key=lambda r: r["credits"], reverse=True)
    return {
        "billable_seconds": sum(e.billable_seconds for e in session_rows),
        "sessions": len({e.session_id for e in session_rows}),
        "credits_charged": sum(e.credits for e in rows),
        "period_start": stamp(start),
        "period_end": stamp(end),
        "by_billing_surface": total(lambda e: True, lambda e: e.billing_surface),
        "by_model": total(lambda e: e.model is not None and not e.internal, lambda e: e.model),
        "by_quality": total(
            lambda e: e.billable_seconds > 0, lambda e: e.quality, lambda e: e.billable_seconds
        ),
        "by_speech_billing_mode": modes,
        "daily_credits_by_billing_surface": {
            d: dict(sorted(daily[d].items())) for d in sorted(daily)
        },
        "embed_usage": embed_rows,
        "credits_by_operation": total(lambda e: True, lambda e: e.operation),
        "recent_settled_charges": {"model": recent(False), "studio": recent(True)},
    }


def _play(kit: Any, history: list[tuple[Any, ...]]) -> tuple[Any, list[str], dict[str, Model]]:
    world = kit.world(kit.small_config())
    config = world.kernel.config.billing
    billing = world.billing
    orgs = [world.org(plan, name=plan) for plan in PLANS]
    models = {
        org: Model(config.plan(plan), config.signup_grant_credits)
        for org, plan in zip(orgs, PLANS, strict=True)
    }
    for org, plan in zip(orgs, PLANS, strict=True):
        models[org].granted = config.signup_grant_credits
        models[org].included = config.plan(plan).included_credits
    usages: list[Any] = []
    runs: list[str] = []
    for op in history:
        kind = op[0]
        if kind == "wait":
            before = world.kernel.clock.now_datetime()
            world.kernel.clock.advance(op[1])
            for _ in range(_months_between(before, world.kernel.clock.now_datetime())):
                for model in models.values():
                    model.close_period()
        elif kind in ("session", "replay"):
            if kind == "session":
                _, i, quality, surface, seconds = op
                embed = f"emb_{i}_{len(usages) % 3}" if surface == "embed" else None
                usage = kit.usage(
                    world,
                    orgs[i],
                    f"sess_{len(usages)}",
                    seconds,
                    quality=quality,
                    surface=surface,
                    embed_id=embed,
                )
                usages.append(usage)
                model = models[usage.org_id]
                multiplier = config.quality_multipliers[quality]
                if seconds > 0:
                    model.debit(seconds * multiplier, model.total - sum(model.holds.values()))
                    if surface in config.platform_managed_surfaces:
                        model.debit(seconds, model.total - sum(model.holds.values()))
            elif usages:
                usage = usages[op[1] % len(usages)]  # a replayed usage event: no new charge
            else:
                continue
            billing.charge_session(usage)
        elif kind == "reserve":
            _, i, credits, studio = op
            run_id = f"run_{len(runs)}"
            model = models[orgs[i]]
            charge = kit.run(orgs[i], run_id, surface="video_generation" if studio else "api")
            if credits > max(0, model.total - sum(model.holds.values())):
                with pytest.raises(QuotaExceeded):
                    billing.reserve_run(charge, credits)
                continue
            billing.reserve_run(charge, credits)
            billing.reserve_run(charge, credits)  # an idempotent retry of the create
            model.holds[run_id] = credits
            runs.append(run_id)
        elif kind in ("settle", "release") and runs:
            run_id = runs[op[1] % len(runs)]
            org = billing.ledger.run_rows(run_id)[0].org_id
            model = models[org]
            held = model.holds.pop(run_id, None)
            if kind == "settle":
                billing.settle_run(run_id, op[2])
                if held is not None:
                    others = sum(model.holds.values())
                    model.debit(min(op[2], held), model.total - others)
            else:
                billing.release_run(run_id)
        elif kind == "refund":
            _, i, credits = op
            billing.refund(orgs[i], credits)
            models[orgs[i]].granted += credits
    return world, orgs, models


@pytest.mark.req("SIM-5", "SIM-4", "RES-QUOTA-1", "LIM-8")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=st.lists(ops, max_size=40))
def test_ledger_agrees_with_the_rules_and_conserves_credits(
    kit: Any, history: list[tuple[Any, ...]]
) -> None:
    world, orgs, models = _play(kit, history)
    billing = world.billing
    entries = billing.entries()
    assert [e.seq for e in entries] == list(range(len(entries)))
    for org in orgs:
        model = models[org]
        rows = billing.entries(org)
        balances = billing.balances(org)
        # the service agrees with the independent model of the rules
        assert (balances.rollover, balances.included, balances.granted) == (
            model.rollover,
            model.included,
            model.granted,
        )
        assert balances.held == sum(model.holds.values())
        # conservation, read from the raw rows by kind
        by_kind: Counter[str] = Counter()
        for e in rows:
            by_kind[e.kind] += e.credits
        overage = sum(e.overage for e in rows)
        assert billing.balance(org) == (
            by_kind["grant"]
            + by_kind["refund"]
            - by_kind["expiry"]
            - by_kind["charge"]
            - by_kind["settlement"]
            + overage
        )
        assert by_kind["reservation"] - by_kind["settlement"] - by_kind["release"] == balances.held
        for e in rows:
            if e.kind == "rollover":
                assert e.rollover_delta == -e.included_delta == e.credits
        # the cached fold equals a fold from scratch; no pool is ever negative along the way
        assert Balances.fold(rows) == balances
        prefix = Balances()
        for e in rows:
            prefix = prefix.extend([e])
            assert min(prefix.rollover, prefix.included, prefix.granted, prefix.held) >= 0
        # the signup grant exists exactly once
        signup = [e for e in rows if e.kind == "grant" and e.note == "signup_grant"]
        assert [e.credits for e in signup] == [world.kernel.config.billing.signup_grant_credits]
        # low balance: one event per downward crossing
        events = [ev for ev in world.kernel.events.of_type(LOW_BALANCE_EVENT) if ev.org_id == org]
        assert len(events) == model.crossings
        quota = billing.quota(org)
        assert quota["balance_credits"] == model.total
        assert quota["can_start_session"] == (
            model.total - balances.held >= world.kernel.config.billing.min_session_start_credits
        )
    # nothing is charged twice
    per_session = Counter((e.session_id, e.operation) for e in entries if e.kind == "charge")
    assert all(n == 1 for n in per_session.values())
    per_run: defaultdict[str, Counter[str]] = defaultdict(Counter)
    amounts: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for e in entries:
        if e.run_id:
            per_run[e.run_id][e.kind] += 1
            amounts[e.run_id][e.kind] += e.credits
    for run_id, kinds in per_run.items():
        assert kinds["reservation"] == 1 and kinds["settlement"] <= 1 and kinds["release"] <= 1
        assert amounts[run_id]["settlement"] <= amounts[run_id]["reservation"]
        if kinds["settlement"] or kinds["release"]:
            assert (
                amounts[run_id]["settlement"] + amounts[run_id]["release"]
                == amounts[run_id]["reservation"]
            )


@pytest.mark.req("RES-USAGE-1", "RES-USAGE-2", "RES-USAGE-3", "EP-USAGE-1", "SIM-5")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(ops, max_size=40),
    window=st.one_of(
        st.sampled_from(["current_month", "previous_month"]),
        st.tuples(st.integers(-86_400 * 5, 86_400 * 120), st.integers(1, 86_400 * 366)),
    ),
    zone=st.one_of(st.sampled_from(ZONES), st.timezone_keys()),
)
def test_summary_equals_a_recomputation_from_raw_rows(
    kit: Any, history: list[tuple[Any, ...]], window: Any, zone: str
) -> None:
    world, orgs, _ = _play(kit, history)
    clock = world.kernel.clock
    for org in orgs:
        if isinstance(window, str):
            summary = world.billing.usage(org, period=window, timezone=zone)
            start = clock.seconds_at(datetime.fromisoformat(summary["period_start"]))
            end = clock.seconds_at(datetime.fromisoformat(summary["period_end"]))
            now = clock.now_datetime()
            first = datetime(now.year, now.month, 1, tzinfo=UTC)
            if window == "previous_month":
                first = (first - timedelta(days=1)).replace(day=1)
            assert clock.datetime_at(start) == first
        else:
            start, length = float(window[0]), float(window[1])
            end = start + length
            summary = world.billing.usage(
                org,
                period_start=clock.datetime_at(start).strftime("%Y-%m-%dT%H:%M:%SZ"),
                period_end=clock.datetime_at(end).strftime("%Y-%m-%dT%H:%M:%SZ"),
                timezone=zone,
            )
        limit = world.kernel.config.billing.recent_charges_listed
        expected = _naive_summary(
            world.billing.entries(), org, start, end, zone, clock.epoch, limit
        )
        assert summary == expected
        total = summary["credits_charged"]
        assert (
            sum(sum(d.values()) for d in summary["daily_credits_by_billing_surface"].values())
            == total
        )
        assert sum(summary["by_billing_surface"].values()) == total
        assert sum(summary["by_speech_billing_mode"].values()) == total
        assert sum(summary["credits_by_operation"].values()) == total
        assert sum(summary["by_model"].values()) <= total
        assert sum(summary["by_quality"].values()) == summary["billable_seconds"]


@pytest.mark.req("RES-USAGE-1", "EP-USAGE-1")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(ops, max_size=30),
    cut=st.integers(0, 86_400 * 90),
)
def test_adjacent_windows_add_up(kit: Any, history: list[tuple[Any, ...]], cut: int) -> None:
    """[a, m) + [m, b) = [a, b): a row at the cut is counted exactly once (inclusive start)."""
    world, orgs, _ = _play(kit, history)
    clock = world.kernel.clock
    a, b = clock.seconds_at(kit.utc(2026, 1, 1)), clock.seconds_at(kit.utc(2026, 4, 1))
    m = a + 1 + min(cut, b - a - 2)

    def iso(seconds: float) -> str:
        return clock.datetime_at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")

    for org in orgs:
        left = world.billing.usage(org, period_start=iso(a), period_end=iso(m))
        right = world.billing.usage(org, period_start=iso(m), period_end=iso(b))
        whole = world.billing.usage(org, period_start=iso(a), period_end=iso(b))
        for name in ("credits_charged", "billable_seconds"):
            assert left[name] + right[name] == whole[name]
        assert left["sessions"] + right["sessions"] == whole["sessions"]
