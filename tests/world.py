"""What the tests share: one ``World`` around the simulator's kernel, and one session body.

Why one: the domain tests of sessions, runs, avatars, billing and the platform each need a clock
to move and callers to act as; each package's ``conftest`` adds only the service it tests (with
the fakes it needs) to this one ``World``, so advancing time or making a caller means the same
everywhere. ``session_body`` is the LiveKit create body every session test starts from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sim.accounts import AccountRegistry, Caller, Scope
from sim.config import SimConfig
from sim.kernel import Kernel

__all__ = ["LIVEKIT", "World", "session_body"]

#: A LiveKit transport the simulator accepts (its room and URL matter to no test).
LIVEKIT: dict[str, Any] = {"type": "livekit", "url": "wss://rtc.example.test", "room_name": "r1"}


def session_body(
    avatar_id: str = "av_stock_mock", *, worker_token: str | None = None, **fields: Any
) -> dict[str, Any]:
    """A ``createSession`` body: ``avatar_id``, a LiveKit transport (with ``worker_token`` when
    given), then ``fields`` (a ``transport`` among them replaces the LiveKit one)."""
    transport = dict(LIVEKIT) if worker_token is None else {**LIVEKIT, "worker_token": worker_token}
    return {"avatar_id": avatar_id, "transport": transport, **fields}


@dataclass
class World:
    """A kernel (clock, ids, random streams) and its accounts; subclasses add a service."""

    kernel: Kernel
    accounts: AccountRegistry

    @staticmethod
    def parts(config: SimConfig | None = None) -> tuple[Kernel, AccountRegistry]:
        """A fresh kernel of ``config`` and its account registry."""
        kernel = Kernel.create(config)
        return kernel, AccountRegistry(kernel.config, kernel.clock, kernel.ids)

    @property
    def now(self) -> float:
        return self.kernel.clock.now

    def advance(self, seconds: float) -> None:
        self.kernel.clock.advance(seconds)

    def at(self, moment: float | datetime) -> None:
        """Advance to ``moment``: a simulated second (exactly, no drift from steps) or a UTC
        date and time."""
        clock = self.kernel.clock
        clock.advance_to(clock.seconds_at(moment) if isinstance(moment, datetime) else moment)

    def org(self, plan_key: str = "free", name: str = "Org") -> str:
        """A new organization's id."""
        return self.accounts.create_organization(name, plan_key).id

    def caller(self, org_id: str | None = None, plan: str = "free") -> Caller:
        """A caller with a new unrestricted key of ``org_id`` (a new organization's if none)."""
        return self.key(org_id if org_id is not None else self.org(plan), None)

    def key(self, org: str | Caller, scopes: frozenset[Scope] | None) -> Caller:
        """A caller with a new key of ``org`` (an id, or a caller's organization) and ``scopes``."""
        org_id = org.org_id if isinstance(org, Caller) else org
        key = self.accounts.create_key(org_id, scopes=scopes)
        return self.accounts.authenticate(f"Bearer {key.secret}")
