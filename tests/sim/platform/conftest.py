from __future__ import annotations

from typing import Any

import pytest

from sim.accounts import Caller
from sim.config import SimConfig
from sim.platform import Platform

LIVEKIT = {"type": "livekit", "url": "wss://rtc.example.test", "room_name": "room-1"}


def session_body(**extra: Any) -> dict[str, Any]:
    return {"avatar_id": "av_stock_aria", "transport": dict(LIVEKIT), **extra}


class World:
    """A platform with one organization and its callers, for platform-level tests."""

    def __init__(self, config: SimConfig | None = None, plan: str = "pro") -> None:
        self.platform = Platform.create(config)
        self.org = self.platform.admin.create_organization("Acme", plan)
        self.keys: dict[str, str] = self.org["keys"]
        self.caller: Caller = self.platform.authenticate(f"Bearer {self.keys['unrestricted']}")

    def caller_for(self, kind: str) -> Caller:
        return self.platform.authenticate(f"Bearer {self.keys[kind]}")

    def call(self, operation: str, caller: Caller | None = None, **params: Any) -> Any:
        return self.platform.call(operation, caller or self.caller, params).body


@pytest.fixture
def world() -> World:
    return World()
