"""Fixtures for the avatar tests: a small world (kernel, accounts, service) and image bytes.

Tests run in importlib mode, where test modules cannot import helpers by name, so the helpers
are handed out as fixtures; the factories are session-scoped so hypothesis tests can use them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from PIL import Image

from sim.accounts import Caller
from sim.avatars import AvatarService
from sim.config import AvatarConfig, SimConfig
from sim.distributions import Constant
from tests.world import World as BaseWorld


@dataclass
class World(BaseWorld):
    avatars: AvatarService
    png: bytes  # a valid portrait to upload
    alice: Caller = field(init=False)  # an unrestricted key of org A
    bob: Caller = field(init=False)  # an unrestricted key of org B

    def __post_init__(self) -> None:
        self.alice = self.caller(self.org(name="A"))
        self.bob = self.caller(self.org(name="B"))


def build_world(seed: int = 7, **avatar_fields: Any) -> World:
    """A world whose avatar config has ``avatar_fields`` overridden (defaults: 30 s fitting)."""
    fields: dict[str, Any] = {
        "fitting_time": Constant(value=30.0),
        "fitting_failure_probability": 0.0,
    }
    fields.update(avatar_fields)
    config = SimConfig(seed=seed, avatars=AvatarConfig(**fields))
    kernel, accounts = World.parts(config)
    return World(kernel, accounts, AvatarService(kernel), image_bytes())


def image_bytes(fmt: str = "PNG", size: tuple[int, int] = (128, 160)) -> bytes:
    """A real image of ``fmt`` drawn with Pillow, in memory."""
    mode = "P" if fmt == "GIF" else "RGB"
    image = Image.new(mode, size, color=1 if mode == "P" else (180, 120, 90))
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.fixture
def world() -> World:
    return build_world()


@pytest.fixture(scope="session")
def make_world() -> Callable[..., World]:
    return build_world


@pytest.fixture(scope="session")
def make_image() -> Callable[..., bytes]:
    return image_bytes
