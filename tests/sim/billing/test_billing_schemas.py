"""What billing renders validates against the contract's derived schemas (spec/schemas)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

SCHEMAS = Path(__file__).resolve().parents[3] / "spec" / "schemas"


def _validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=FormatChecker())


def _busy_org(kit: Any) -> tuple[Any, str]:
    world = kit.world()
    org = world.org("pro")
    billing = world.billing
    world.at(kit.utc(2026, 3, 7, 12))
    for i, (quality, surface) in enumerate(
        [("pro", "api"), ("lite", "embed"), ("mock", "playground"), ("standard", "pipecat")]
    ):
        billing.charge_session(
            kit.usage(
                world,
                org,
                f"sess_{i}",
                90 + i,
                quality=quality,
                surface=surface,
                embed_id="emb_x" if surface == "embed" else None,
            )
        )
        world.kernel.clock.advance(7_200)
    billing.reserve_run(kit.run(org, "run_a"), 100)
    billing.settle_run("run_a", 60)
    billing.reserve_run(
        kit.run(
            org,
            "run_v",
            model="sim/portrait-video",
            operation="animate",
            surface="video_generation",
        ),
        300,
    )
    billing.settle_run("run_v", 300)
    return world, org


@pytest.mark.req("RES-USAGE-1", "RES-USAGE-2", "RES-USAGE-3")
@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
def test_usage_summary_matches_its_schema(kit: Any, zone: str) -> None:
    world, org = _busy_org(kit)
    summary = world.billing.usage(org, timezone=zone)
    assert summary["credits_charged"] > 0 and summary["embed_usage"]
    errors = [e.message for e in _validator("UsageSummary").iter_errors(summary)]
    assert errors == []


@pytest.mark.req("RES-QUOTA-1", "EP-BILL-1")
def test_quota_and_plans_match_their_schemas(kit: Any) -> None:
    world, org = _busy_org(kit)
    assert list(_validator("Quota").iter_errors(world.billing.quota(org))) == []
    assert list(_validator("PlanList").iter_errors(world.billing.plans())) == []
