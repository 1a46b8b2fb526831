"""Fixtures for the facade's tests: a fresh platform, its app, an in-process client, keys."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.platform import Platform
from tests.asgi.support import ADMIN_TOKEN, Org, make_org


@pytest.fixture
def platform() -> Platform:
    return Platform.create()


@pytest.fixture
def app(platform: Platform) -> Any:
    return create_app(platform, admin_token=ADMIN_TOKEN)


@pytest.fixture
def client(app: Any) -> Iterator[httpx.Client]:
    with httpx.Client(transport=SyncASGITransport(app), base_url="http://testserver") as http:
        yield http


@pytest.fixture
def org(platform: Platform) -> Org:
    """An enterprise organization (may delete runs) with its four kinds of key."""
    return make_org(platform, "Acme", "enterprise")


@pytest.fixture
def other_org(platform: Platform) -> Org:
    return make_org(platform, "Globex", "starter")
