from __future__ import annotations

from typing import Any

import pytest

from sim.accounts import Caller
from sim.config import SimConfig
from sim.platform import Platform
from tests.world import World as BaseWorld
from tests.world import session_body

__all__ = ["World", "session_body"]


class World(BaseWorld):
    """A whole platform with one organization (``org``) and its unrestricted caller (``owner``)."""

    def __init__(self, config: SimConfig | None = None, plan: str = "pro") -> None:
        self.platform = Platform.create(config)
        super().__init__(self.platform.kernel, self.platform.accounts)
        self.org_body = self.platform.admin.create_organization("Acme", plan)
        self.keys: dict[str, str] = self.org_body["keys"]
        self.owner: Caller = self.platform.authenticate(f"Bearer {self.keys['unrestricted']}")

    def caller_for(self, kind: str) -> Caller:
        return self.platform.authenticate(f"Bearer {self.keys[kind]}")

    def call(self, operation: str, caller: Caller | None = None, **params: Any) -> Any:
        return self.platform.call(operation, caller or self.owner, params).body


@pytest.fixture
def world() -> World:
    return World()
