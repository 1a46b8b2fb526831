"""The usage summary: window rules, fields, timezone buckets and the gap sections."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from sim.errors import Unprocessable

SEED_FIELDS = {
    "billable_seconds",
    "sessions",
    "credits_charged",
    "period_start",
    "period_end",
    "by_billing_surface",
    "by_model",
    "by_quality",
    "by_speech_billing_mode",
    "daily_credits_by_billing_surface",
}
GAP_FIELDS = {"embed_usage", "credits_by_operation", "recent_settled_charges"}


@pytest.mark.req("EP-USAGE-1")
@pytest.mark.parametrize(
    ("query", "code", "param"),
    [
        ({"period_start": "2026-01-01T00:00:00Z"}, "usage.window_invalid", "period_end"),
        ({"period_end": "2026-01-02T00:00:00Z"}, "usage.window_invalid", "period_start"),
        (
            {
                "period": "current_month",
                "period_start": "2026-01-01T00:00:00Z",
                "period_end": "2026-01-02T00:00:00Z",
            },
            "usage.window_invalid",
            "period",
        ),
        (
            {"period": "previous_month", "period_end": "2026-01-02T00:00:00Z"},
            "usage.window_invalid",
            "period",
        ),
        (
            {"period_start": "2026-01-02T00:00:00Z", "period_end": "2026-01-01T00:00:00Z"},
            "usage.window_invalid",
            "period_end",
        ),
        (
            {"period_start": "2026-01-01T00:00:00Z", "period_end": "2026-01-01T00:00:00Z"},
            "usage.window_invalid",
            "period_end",
        ),
        (
            {"period_start": "2026-01-01T00:00:00Z", "period_end": "2027-01-03T00:00:00Z"},
            "usage.window_invalid",
            "period_end",
        ),
        (
            {"period_start": "2026-01-01T00:00:00.500Z", "period_end": "2026-01-02T00:00:00Z"},
            "usage.window_invalid",
            "period_start",
        ),
        (
            {"period_start": "2026-01-01T00:00:00+01:00", "period_end": "2026-01-02T00:00:00Z"},
            "usage.window_invalid",
            "period_start",
        ),
        (
            {"period_start": "2026-01-01", "period_end": "2026-01-02T00:00:00Z"},
            "usage.window_invalid",
            "period_start",
        ),
        (
            {"period_start": "2026-02-30T00:00:00Z", "period_end": "2026-03-02T00:00:00Z"},
            "usage.window_invalid",
            "period_start",
        ),
        ({"period": "last_week"}, "validation.enum", "period"),
        ({"timezone": "Mars/Olympus_Mons"}, "usage.timezone_invalid", "timezone"),
        ({"timezone": "America"}, "usage.timezone_invalid", "timezone"),
        ({"timezone": "../../etc/passwd"}, "usage.timezone_invalid", "timezone"),
        ({"timezone": ""}, "usage.timezone_invalid", "timezone"),
        ({"timezone": "Europe/" + "x" * 60}, "usage.timezone_invalid", "timezone"),
    ],
)
def test_invalid_windows_are_refused_with_the_offending_param(
    kit: Any, query: dict[str, str], code: str, param: str
) -> None:
    world = kit.world()
    org = world.org()
    with pytest.raises(Unprocessable) as refused:
        world.billing.usage(org, **query)
    assert (refused.value.type, refused.value.code, refused.value.param) == (
        "unprocessable",
        code,
        param,
    )


@pytest.mark.req("EP-USAGE-1", "RES-USAGE-1")
def test_valid_windows(kit: Any) -> None:
    world = kit.world()
    org = world.org()
    world.at(kit.utc(2026, 3, 14, 15))
    usage = world.billing.usage
    current = usage(org)
    assert (current["period_start"], current["period_end"]) == (
        "2026-03-01T00:00:00.000Z",
        "2026-04-01T00:00:00.000Z",
    )
    assert usage(org, period="current_month") == current
    previous = usage(org, period="previous_month", timezone="Asia/Kolkata")
    assert (previous["period_start"], previous["period_end"]) == (
        "2026-02-01T00:00:00.000Z",
        "2026-03-01T00:00:00.000Z",
    )
    explicit = usage(
        org, period_start="2025-03-01T00:00:00.000Z", period_end="2026-03-02T00:00:00+00:00"
    )  # 366 days: the longest allowed
    assert explicit["period_end"] == "2026-03-02T00:00:00.000Z"
    assert set(current) == SEED_FIELDS | GAP_FIELDS


@pytest.mark.req("EP-USAGE-1")
def test_previous_month_of_january_is_last_december(kit: Any) -> None:
    world = kit.world()
    org = world.org()
    summary = world.billing.usage(org, period="previous_month")
    assert (summary["period_start"], summary["period_end"]) == (
        "2025-12-01T00:00:00.000Z",
        "2026-01-01T00:00:00.000Z",
    )


@pytest.mark.req("RES-USAGE-1")
def test_window_counts_its_start_and_not_its_end(kit: Any) -> None:
    world = kit.world()
    org = world.org()
    world.at(kit.utc(2026, 1, 5))
    world.billing.charge_session(kit.usage(world, org, "sess_at_start", 10))  # 20 credits
    world.at(kit.utc(2026, 1, 6))
    world.billing.charge_session(kit.usage(world, org, "sess_at_end", 100))  # 200 credits
    summary = world.billing.usage(
        org, period_start="2026-01-05T00:00:00Z", period_end="2026-01-06T00:00:00Z"
    )
    assert (summary["credits_charged"], summary["sessions"], summary["billable_seconds"]) == (
        20,
        1,
        10,
    )


@pytest.mark.req("RES-USAGE-1")
@pytest.mark.parametrize(
    ("zone", "day", "hours"),
    [
        ("America/New_York", "2026-03-08", 23),
        ("America/New_York", "2026-11-01", 25),
        ("Europe/Berlin", "2026-03-29", 23),
        ("Europe/Berlin", "2026-10-25", 25),
        ("Australia/Sydney", "2026-04-05", 25),
        ("Asia/Kolkata", "2026-03-08", 24),
        ("UTC", "2026-03-08", 24),
    ],
)
def test_daily_buckets_follow_local_days_across_dst(
    kit: Any, zone: str, day: str, hours: int
) -> None:
    """One 1-second ``lite`` session per UTC hour: a local day holds as many as it has hours."""
    world = kit.world()
    org = world.org("enterprise")
    year, month, dom = (int(x) for x in day.split("-"))
    start = kit.utc(year, month, dom) - timedelta(days=2)
    world.at(start)
    for hour in range(24 * 4):
        world.at(start + timedelta(hours=hour, minutes=30))
        world.billing.charge_session(kit.usage(world, org, f"sess_{hour}", 1, quality="lite"))
    summary = world.billing.usage(
        org,
        period_start=f"{start:%Y-%m-%dT%H:%M:%S}Z",
        period_end=f"{start + timedelta(days=4):%Y-%m-%dT%H:%M:%S}Z",
        timezone=zone,
    )
    daily = summary["daily_credits_by_billing_surface"]
    assert daily[day] == {"api": hours}
    assert sum(d["api"] for d in daily.values()) == summary["credits_charged"] == 96


@pytest.mark.req("RES-USAGE-1", "RES-USAGE-2")
def test_slices_of_a_mixed_month(kit: Any) -> None:
    world = kit.world()
    org = world.org("pro")
    billing = world.billing
    world.at(kit.utc(2026, 1, 3, 10))
    billing.charge_session(kit.usage(world, org, "s_api", 100, quality="pro"))  # 400
    billing.charge_session(
        kit.usage(world, org, "s_play", 30, quality="lite", surface="playground")
    )  # 30 + 30 internal speech
    billing.reserve_run(kit.run(org, "r_speech"), 50)
    billing.settle_run("r_speech", 40)
    billing.reserve_run(kit.run(org, "r_internal", model="sim/internal-speech", internal=True), 9)
    billing.settle_run("r_internal", 9)
    billing.reserve_run(kit.run(org, "r_failed"), 70)
    billing.release_run("r_failed")  # released: no usage
    summary = billing.usage(org)
    assert summary["credits_charged"] == 400 + 30 + 30 + 40 + 9
    assert summary["billable_seconds"] == 130
    assert summary["sessions"] == 2
    assert summary["by_quality"] == {"lite": 30, "pro": 100}
    assert summary["by_model"] == {"sim/speech": 40}  # no session rows, no internal model
    assert summary["by_billing_surface"] == {"api": 449, "playground": 60}
    assert summary["by_speech_billing_mode"] == {"customer_managed": 449, "platform_managed": 60}
    assert summary["credits_by_operation"] == {
        "run.sim/internal-speech.synthesize": 9,
        "run.sim/speech.synthesize": 40,
        "session.realtime": 430,
        "session.speech": 30,
    }
    assert summary["daily_credits_by_billing_surface"] == {
        "2026-01-03": {"api": 449, "playground": 60}
    }


@pytest.mark.req("RES-USAGE-1")
def test_sessions_count_only_charges_settled_in_the_window(kit: Any) -> None:
    world = kit.world()
    org = world.org()
    world.at(kit.utc(2026, 1, 31, 23, 59, 59))
    world.billing.charge_session(kit.usage(world, org, "s_jan", 10))
    world.at(kit.utc(2026, 2, 1))
    world.billing.charge_session(kit.usage(world, org, "s_feb", 20))
    assert world.billing.usage(org)["sessions"] == 1
    assert world.billing.usage(org)["billable_seconds"] == 20
    assert world.billing.usage(org, period="previous_month")["billable_seconds"] == 10


@pytest.mark.req("RES-USAGE-3")
def test_embed_usage_is_ordered_by_credits_then_latest_use(kit: Any) -> None:
    world = kit.world()
    org = world.org("pro")
    billing = world.billing

    def embed_session(session: str, embed: str, seconds: int) -> None:
        billing.charge_session(
            kit.usage(
                world,
                org,
                session,
                seconds,
                quality="lite",
                surface="embed",
                embed_id=embed,
                avatar_id=f"av_{embed}",
            )
        )
        world.kernel.clock.advance(60)

    embed_session("s1", "emb_a", 10)  # a: 20 credits (10 + 10 speech)
    embed_session("s2", "emb_b", 5)  # b: 10 ...
    embed_session("s3", "emb_c", 10)  # c: 20, used after a
    embed_session("s4", "emb_b", 5)  # b: 20, used last
    embed_session("s5", "emb_d", 30)  # d: 60
    rows = billing.usage(org)["embed_usage"]
    assert [(r["embed_id"], r["credits"]) for r in rows] == [
        ("emb_d", 60),
        ("emb_b", 20),
        ("emb_c", 20),
        ("emb_a", 20),
    ]
    assert rows[1] == {
        "embed_id": "emb_b",
        "avatar_id": "av_emb_b",
        "credits": 20,
        "billable_seconds": 10,
        "last_used_at": "2026-01-01T00:03:00.000Z",
    }


@pytest.mark.req("RES-USAGE-3")
def test_recent_settled_charges_split_model_and_studio_newest_first(kit: Any) -> None:
    world = kit.world()
    org = world.org("enterprise")
    billing = world.billing
    for i in range(12):
        billing.reserve_run(kit.run(org, f"run_m{i:02d}"), 10 + i)
        billing.settle_run(f"run_m{i:02d}", 10 + i)
        world.kernel.clock.advance(1)
    billing.reserve_run(
        kit.run(
            org,
            "run_studio",
            model="sim/portrait-video",
            operation="animate",
            surface="video_generation",
        ),
        500,
    )
    billing.settle_run("run_studio", 300)
    recent = billing.usage(org)["recent_settled_charges"]
    limit = world.kernel.config.billing.recent_charges_listed
    assert [r["run_id"] for r in recent["model"]] == [f"run_m{i:02d}" for i in range(11, 1, -1)]
    assert len(recent["model"]) == limit
    assert recent["model"][0] == {
        "credits": 21,
        "settled_at": "2026-01-01T00:00:11.000Z",
        "run_id": "run_m11",
        "model": "sim/speech",
    }
    assert recent["studio"] == [
        {
            "credits": 300,
            "settled_at": "2026-01-01T00:00:12.000Z",
            "run_id": "run_studio",
            "model": "sim/portrait-video",
        }
    ]


@pytest.mark.req("RES-USAGE-1", "SIM-5")
def test_a_summary_reads_only_its_own_window_of_its_own_organization(
    kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary reads its organization's rollup alone, and of it only the groups' rows in its
    window, by bisection: no row of another organization or another month is read."""
    from sim.billing.ledger import Ledger
    from sim.billing.rollups import Sums

    world = kit.world()
    orgs = [world.org(name=f"o{i}") for i in range(5)]
    for day in range(1, 70):
        world.at(kit.utc(2026, 1, 1) + timedelta(days=day))
        for org in orgs:
            world.billing.charge_session(kit.usage(world, org, f"s_{org}_{day}", 3))
    asked: list[str] = []
    spans: list[tuple[int, int]] = []
    real_usage, real_span = Ledger.usage, Sums.span

    def usage(ledger: Ledger, org_id: str) -> Any:
        asked.append(org_id)
        return real_usage(ledger, org_id)

    def span(group: Sums, start: float, end: float) -> tuple[int, int]:
        found = real_span(group, start, end)
        spans.append(found)
        return found

    monkeypatch.setattr(Ledger, "usage", usage)
    monkeypatch.setattr(Sums, "span", span)
    summary = world.billing.usage(orgs[2], period="previous_month")  # February
    in_february = [
        e
        for e in world.billing.entries(orgs[2])
        if kit.utc(2026, 2, 1) <= world.kernel.clock.datetime_at(e.at) < kit.utc(2026, 3, 1)
    ]
    assert asked == [orgs[2]]  # nothing of the other organizations
    assert sum(last - first for first, last in spans) == 2 * len(in_february)  # by group, surface
    assert summary["sessions"] == 28
    assert summary["credits_charged"] == sum(e.credits for e in in_february)
