"""Fixtures for the session service: a kernel, accounts, and small recording fakes of the
billing and avatar ports (the real services are built elsewhere and wired by sim.platform).

Tests run in importlib mode, where a test module cannot import helpers by name, so the builders
are handed out as fixtures: ``world`` (a fresh service) and ``kit`` (builders and constants, for
hypothesis tests that need several worlds). Test modules import the types for annotations only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from sim.config import SchedulerConfig, SimConfig
from sim.distributions import Constant
from sim.errors import Conflict, NotFound, QuotaExceeded
from sim.ports import RunCharge, SessionUsage
from sim.sessions import SessionService
from sim.sessions.rollup import status_body
from tests.world import World as BaseWorld
from tests.world import session_body

STOCK = "av_stock_anna"
PROCESSING = "av_processing"


@dataclass
class RecordingBilling:
    """Implements ``BillingPort``; records every charge and can refuse session starts."""

    charges: list[SessionUsage] = field(default_factory=list)
    broke: set[str] = field(default_factory=set)

    def open_account(self, org_id: str, plan_key: str) -> None:
        return None

    def ensure_can_start_session(self, org_id: str) -> None:
        if org_id in self.broke:
            raise QuotaExceeded("insufficient_credits", "Not enough credits.")

    def charge_session(self, usage: SessionUsage) -> None:
        self.charges.append(usage)

    def ensure_can_reserve(self, org_id: str, credits: int) -> None:
        raise NotImplementedError

    def reserve_run(self, charge: RunCharge, credits: int) -> None:
        raise NotImplementedError

    def cancel_reservation(self, run_id: str) -> None:
        raise NotImplementedError

    def settle_run(self, run_id: str, credits: int) -> None:
        raise NotImplementedError

    def release_run(self, run_id: str) -> None:
        raise NotImplementedError


@dataclass
class FakeAvatars:
    """Implements ``AvatarLookup``: one stock avatar, one still processing."""

    def require_usable(self, org_id: str, avatar_id: str) -> None:
        if avatar_id == PROCESSING:
            raise Conflict("avatar.not_ready", "Still processing.", param="avatar_id")
        if avatar_id != STOCK:
            raise NotFound("avatar.not_found", "No such avatar.", param="avatar_id")


@dataclass
class World(BaseWorld):
    billing: RecordingBilling
    service: SessionService

    def status(self) -> dict[str, Any]:
        """The ``GET /v1/status`` body of this fleet."""
        return status_body(
            self.service.pool_status(),
            self.kernel.config.scheduler.workers,
            self.service.faults,
            self.kernel.clock,
        )


def body(**overrides: Any) -> dict[str, Any]:
    """A create body of the stock avatar whose transport carries a worker token."""
    return {**session_body(STOCK, worker_token="secret-token-xyz"), **overrides}


def make_world(config: SimConfig | None = None) -> World:
    kernel, accounts = World.parts(config)
    billing = RecordingBilling()
    service = SessionService(kernel, accounts, billing, FakeAvatars())
    return World(kernel, accounts, billing, service)


@dataclass(frozen=True)
class Kit:
    stock: str = STOCK
    processing: str = PROCESSING
    world: Callable[..., World] = make_world
    body: Callable[..., dict[str, Any]] = body


@pytest.fixture(scope="session")
def kit() -> Kit:
    return Kit()


@pytest.fixture
def world() -> World:
    return make_world()


FIXED_LATENCIES = SimConfig(
    scheduler=SchedulerConfig(
        worker_boot=Constant(value=2.0), first_frame_latency=Constant(value=0.5)
    )
)


@pytest.fixture
def world_fixed() -> World:
    """A service whose worker boots in exactly 2 s and shows its first frame 0.5 s later."""
    return make_world(FIXED_LATENCIES)
