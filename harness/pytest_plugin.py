"""avatar-sim's pytest plugin, loaded through the ``pytest11`` entry point ``avatar_sim``.

Why a thin module: each concern lives in its own module (requirement markers and the results
report in ``harness.traceability``; simulator, clock, client and base-URL fixtures to come) and
this file only registers them with pytest, so adding a concern means adding a line here rather
than growing one large plugin. Fixtures defined or imported at module level here are visible to
every test of a project that installs avatar-sim.
"""

from __future__ import annotations

import pytest

from harness import traceability

__all__ = ["pytest_addoption", "pytest_configure"]


def pytest_addoption(parser: pytest.Parser) -> None:
    traceability.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    traceability.configure(config)
