"""avatar-sim's pytest plugin, loaded through the ``pytest11`` entry point ``avatar_sim``.

Why a thin module: each concern lives in its own module (requirement markers and the results
report in ``harness.traceability``; the simulator, clock, organization and client fixtures with
their base-URL switch in ``harness.conformance.fixtures``) and this file only registers them with
pytest, so adding a concern means adding a line here rather than growing one large plugin.
Fixtures defined or imported at module level here are visible to every test of a project that
installs avatar-sim.
"""

from __future__ import annotations

import pytest

from harness import traceability
from harness.conformance import fixtures
from harness.conformance.fixtures import api_client, sim_clock, sim_org, sim_platform

__all__ = [
    "api_client",
    "pytest_addoption",
    "pytest_configure",
    "sim_clock",
    "sim_org",
    "sim_platform",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    traceability.add_options(parser)
    fixtures.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    traceability.configure(config)
    fixtures.check_options(config)
