"""Fixtures for the avatar tests: a small world (kernel, accounts, service) and image bytes.

Tests run in importlib mode, where test modules cannot import helpers by name, so the helpers
are handed out as fixtures; the factories are session-scoped so hypothesis tests can use them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from PIL import Image

from sim.accounts import AccountRegistry, Caller
from sim.avatars import AvatarService
from sim.config import AvatarConfig, Constant, SimConfig
from sim.kernel import Kernel


@dataclass
class World:
    kernel: Kernel
    accounts: AccountRegistry
    avatars: AvatarService
    alice: Caller  # an unrestricted key of org A
    bob: Caller  # an unrestricted key of org B
    png: bytes  # a valid portrait to upload

    def advance(self, seconds: float) -> None:
        self.kernel.clock.advance(seconds)


def _caller(accounts: AccountRegistry, name: str) -> Caller:
    org = accounts.create_organization(name)
    key = accounts.create_key(org.id)
    return accounts.authenticate(f"Bearer {key.secret}")


def build_world(seed: int = 7, **avatar_fields: Any) -> World:
    """A world whose avatar config has ``avatar_fields`` overridden (defaults: 30 s fitting)."""
    fields: dict[str, Any] = {
        "fitting_time": Constant(value=30.0),
        "fitting_failure_probability": 0.0,
    }
    fields.update(avatar_fields)
    config = SimConfig(seed=seed, avatars=AvatarConfig(**fields))
    kernel = Kernel.create(config)
    accounts = AccountRegistry(config, kernel.clock, kernel.ids)
    return World(
        kernel,
        accounts,
        AvatarService(kernel),
        _caller(accounts, "A"),
        _caller(accounts, "B"),
        image_bytes(),
    )


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
