"""The scenario runner (NB-2): ``run_scenario(scenario, seed=None) -> RunResult``."""

from __future__ import annotations

from harness.runner.engine import Played, RawRun, play, simulate
from harness.runner.records import CallRecord, ClientRecord
from harness.runner.tables import RunResult, collect
from harness.scenarios.model import Scenario

__all__ = [
    "CallRecord",
    "ClientRecord",
    "Played",
    "RawRun",
    "RunResult",
    "play",
    "run_scenario",
    "simulate",
]


def run_scenario(scenario: Scenario, seed: int | None = None) -> RunResult:
    """Run ``scenario`` in process with ``seed`` (default: the file's); collect its tables
    (the raw run is released as it is collected: nobody else holds it)."""
    return collect(simulate(scenario, seed), release=True)
