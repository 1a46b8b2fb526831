"""avatar-sim's pytest plugin, loaded through the ``pytest11`` entry point ``avatar_sim``.

Why a thin module: each concern lives in its own module (requirement markers and the results
report in ``harness.traceability``; the simulator, clock, organization and client fixtures with
their base-URL switch in ``harness.conformance.fixtures``; the state-transition fixtures
``sim_admin``, ``session_events`` and ``play_audio`` with the admin-token switch in
``harness.testing.fixtures``) and this file only registers them with pytest, so adding a concern
means adding a line here rather than growing one large plugin.

Installing avatar-sim loads this plugin into every pytest run, so it must change nothing for a
project that does not use it. The fixtures only exist (a project's own fixture of the same name
wins) and their options are namespaced (``--avatar-sim-…``, under an "avatar-sim" heading); the
``req`` marker checks and ``--req-report`` switch on only in a project whose configuration names
a requirement catalog (``avatar_sim_requirements``, see ``harness.traceability``).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from harness import traceability
from harness.conformance import fixtures
from harness.conformance.fixtures import api_client, sim_clock, sim_org, sim_platform
from harness.testing import fixtures as testing
from harness.testing.fixtures import play_audio, session_events, sim_admin

__all__ = [
    "api_client",
    "play_audio",
    "pytest_addoption",
    "pytest_configure",
    "pytest_fixture_setup",
    "pytest_load_initial_conftests",
    "session_events",
    "sim_admin",
    "sim_clock",
    "sim_org",
    "sim_platform",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    fixtures.add_options(parser)
    testing.add_options(parser)
    traceability.add_options(parser)


def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    traceability.add_opt_in_options(early_config, parser)


def pytest_configure(config: pytest.Config) -> None:
    traceability.configure(config)
    fixtures.check_options(config)
    testing.check_options(config)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, Any]:
    """Once the plugin's ``api_client`` exists, tell ``wait_for`` and kin what it talks to."""
    client = yield
    testing.bind_api_client(fixturedef, request, client)
    return client
