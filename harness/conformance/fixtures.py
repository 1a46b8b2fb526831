"""pytest fixtures for suites about the API: an in-process simulator, its clock, an organization,
and an authenticated client that talks to the simulator or, with a switch, to a deployment (HAR-4).

Why one client fixture for both: a suite written against ``api_client`` runs unchanged in-process
(fast, with a virtual clock it can move) and against a real base URL
(``--avatar-sim-base-url URL --avatar-sim-api-key KEY``). Tests that need the simulator itself
(``sim_platform``, ``sim_clock``, ``sim_org``) are skipped against a deployment, since there is
nothing to reach into.

Heavy imports (the facade, the platform) happen inside the fixtures, so loading the plugin costs
a test run nothing when the fixtures are not used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from harness.conformance.target import SyncASGITransport

if TYPE_CHECKING:
    from sim.clock import Clock
    from sim.platform import Platform

__all__ = [
    "BASE_URL_OPTION",
    "add_options",
    "api_client",
    "base_url",
    "check_options",
    "sim_clock",
    "sim_org",
    "sim_platform",
]

BASE_URL_OPTION = "--avatar-sim-base-url"
API_KEY_OPTION = "--avatar-sim-api-key"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("avatar-sim", "avatar-sim")
    group.addoption(
        BASE_URL_OPTION,
        dest="avatar_sim_base_url",
        default=None,
        metavar="URL",
        help="run api_client against this deployment instead of the in-process simulator",
    )
    group.addoption(
        API_KEY_OPTION,
        dest="avatar_sim_api_key",
        default=None,
        metavar="KEY",
        help="the API key api_client sends to the deployment of --avatar-sim-base-url",
    )


def check_options(config: pytest.Config) -> None:
    """A base URL without a key is a usage error, reported before any test runs."""
    if base_url(config) and not config.getoption("avatar_sim_api_key", default=None):
        raise pytest.UsageError(f"{BASE_URL_OPTION} needs {API_KEY_OPTION}")


def base_url(config: pytest.Config) -> str | None:
    value = config.getoption("avatar_sim_base_url", default=None)
    return str(value) if value else None


def _require_simulator(request: pytest.FixtureRequest) -> None:
    if base_url(request.config):
        pytest.skip(f"needs the in-process simulator ({BASE_URL_OPTION} is set)")


@pytest.fixture
def sim_platform(request: pytest.FixtureRequest) -> Platform:
    """A fresh simulated service (default configuration, seed 0) with a manual clock."""
    _require_simulator(request)
    from sim.platform import Platform

    return Platform.create()


@pytest.fixture
def sim_clock(sim_platform: Platform) -> Clock:
    """The virtual clock of ``sim_platform``: time moves only on ``advance(seconds)``."""
    return sim_platform.clock


@pytest.fixture
def sim_org(sim_platform: Platform) -> dict[str, Any]:
    """An enterprise organization created through the admin controls: ``{"id", "plan", "keys"}``
    with keys ``unrestricted``, ``runs_read``, ``runs_write`` and ``revoked``."""
    return sim_platform.admin.create_organization("pytest organization", "enterprise")


@pytest.fixture
def api_client(request: pytest.FixtureRequest) -> Iterator[httpx.Client]:
    """An httpx client authenticated with an unrestricted key: in-process against
    ``sim_platform`` (the organization ``sim_org``), or against ``--avatar-sim-base-url``."""
    url = base_url(request.config)
    if url:
        key = request.config.getoption("avatar_sim_api_key")
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=30.0) as client:
            yield client
        return
    from sim.asgi import create_app

    platform: Platform = request.getfixturevalue("sim_platform")
    org: dict[str, Any] = request.getfixturevalue("sim_org")
    headers = {"Authorization": f"Bearer {org['keys']['unrestricted']}"}
    transport = SyncASGITransport(create_app(platform))
    with httpx.Client(transport=transport, base_url="http://testserver", headers=headers) as client:
        yield client
