"""avatar-sim's pytest plugin, loaded through the ``pytest11`` entry point ``avatar_sim``.

Why a thin module: each concern lives in its own module (requirement markers and the results
report in ``harness.traceability``; the options and the start-of-run checks of the target in
``harness.testing.options``; every fixture in ``harness.testing.fixtures``) and this file only
registers them with pytest, so adding a concern means adding a line here rather than growing one
large plugin.

Installing avatar-sim loads this plugin into every pytest run, so it must change nothing for a
project that does not use it. The fixtures only exist (a project's own fixture of the same name
wins) and their options are namespaced (``--avatar-sim-…``, under an "avatar-sim" heading); the
``req`` marker checks and ``--req-report`` switch on only in a project whose configuration names
a requirement catalog (``avatar_sim_requirements``, see ``harness.traceability``).
"""

from __future__ import annotations

import pytest

from harness import traceability
from harness.testing import options
from harness.testing.fixtures import (
    api_client,
    avatar_sim_served,
    created_sessions,
    fresh_org,
    play_audio,
    session_events,
    sim_admin,
    sim_clock,
    sim_org,
    sim_platform,
    sim_target,
)

__all__ = [
    "api_client",
    "avatar_sim_served",
    "created_sessions",
    "fresh_org",
    "play_audio",
    "pytest_addoption",
    "pytest_configure",
    "pytest_load_initial_conftests",
    "pytest_sessionstart",
    "session_events",
    "sim_admin",
    "sim_clock",
    "sim_org",
    "sim_platform",
    "sim_target",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)
    traceability.add_options(parser)


def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    traceability.add_opt_in_options(early_config, parser)


def pytest_configure(config: pytest.Config) -> None:
    traceability.configure(config)
    options.check_options(config)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Fail fast, once, naming the option: the target answers, takes the key and the token."""
    options.check_target(session.config)
