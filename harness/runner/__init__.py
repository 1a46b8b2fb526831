"""The scenario runner (NB-2): ``run_scenario(scenario, seed=None) -> RunResult``."""

from __future__ import annotations

from harness.collect import RunResult, collect
from harness.runner.engine import RawRun, simulate
from harness.runner.records import CallRecord, ClientRecord
from harness.scenarios.model import Scenario

__all__ = ["CallRecord", "ClientRecord", "RawRun", "RunResult", "run_scenario", "simulate"]


def run_scenario(scenario: Scenario, seed: int | None = None) -> RunResult:
    """Run ``scenario`` in process with ``seed`` (default: the file's); collect its tables
    (the raw run is released as it is collected: nobody else holds it)."""
    return collect(simulate(scenario, seed), release=True)
