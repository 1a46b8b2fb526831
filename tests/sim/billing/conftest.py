"""Shared builders for the billing tests: a kernel, an account registry and a ``Billing``.

Tests run in importlib mode, where a test module cannot import helpers by name, so the builders
are handed out as one session-scoped fixture, ``kit`` (usable from hypothesis tests too).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from sim.billing import Billing
from sim.config import BillingConfig, PlanConfig, SimConfig
from sim.ports import RunCharge, SessionUsage
from tests.world import World as BaseWorld

__all__ = ["Kit", "World", "kit"]


@dataclass
class World(BaseWorld):
    billing: Billing

    def org(self, plan_key: str = "free", name: str = "acme") -> str:
        """A new organization with its billing account open."""
        org_id = super().org(plan_key, name)
        self.billing.open_account(org_id, plan_key)
        return org_id


def make_world(config: SimConfig | None = None) -> World:
    kernel, accounts = World.parts(config)
    return World(kernel, accounts, Billing(kernel, accounts))


def small_billing(**overrides: Any) -> SimConfig:
    """Small numbers so that exhaustion, rollover caps and thresholds are reached quickly."""
    plans = (
        PlanConfig(
            key="free",
            name="Free",
            price_usd_month=0,
            included_credits=0,
            rollover_cap_credits=0,
            max_session_duration_seconds=600,
            concurrent_sessions=5,
            low_balance_threshold_credits=200,
        ),
        PlanConfig(
            key="capped",
            name="Capped",
            price_usd_month=9,
            included_credits=1_000,
            rollover_cap_credits=300,
            max_session_duration_seconds=600,
            concurrent_sessions=5,
            low_balance_threshold_credits=400,
        ),
        PlanConfig(
            key="nocap",
            name="No rollover",
            price_usd_month=5,
            included_credits=700,
            rollover_cap_credits=0,
            max_session_duration_seconds=600,
            concurrent_sessions=5,
            low_balance_threshold_credits=100,
        ),
    )
    billing = BillingConfig(signup_grant_usd=0.5, plans=plans, **overrides)
    return SimConfig(billing=billing)


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def session_usage(
    world: World,
    org_id: str,
    session_id: str,
    seconds: int,
    *,
    quality: str = "standard",
    surface: str = "api",
    embed_id: str | None = None,
    avatar_id: str = "av_stock_mock",
) -> SessionUsage:
    fps = world.kernel.config.sessions.frames_per_second
    return SessionUsage(
        session_id=session_id,
        org_id=org_id,
        quality=quality,
        billing_surface=surface,
        billable_seconds=seconds,
        frames=seconds * fps,
        ended_at=world.now,
        avatar_id=avatar_id,
        embed_id=embed_id,
    )


def run_charge(
    org_id: str,
    run_id: str,
    *,
    model: str = "sim/speech",
    operation: str = "synthesize",
    surface: str = "api",
    internal: bool = False,
) -> RunCharge:
    return RunCharge(
        run_id=run_id,
        org_id=org_id,
        model=model,
        operation=operation,
        pricing_version="2026-01",
        billing_surface=surface,
        internal_model=internal,
    )


class Kit:
    """The builders above, as one object a fixture can hand out."""

    World = World
    world = staticmethod(make_world)
    small_config = staticmethod(small_billing)
    usage = staticmethod(session_usage)
    run = staticmethod(run_charge)
    utc = staticmethod(utc)


@pytest.fixture(scope="session")
def kit() -> Kit:
    return Kit()
