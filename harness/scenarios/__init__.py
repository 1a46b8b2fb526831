"""Scenarios as data (NB-1): the YAML format, its pydantic models and the loader."""

from __future__ import annotations

from harness.scenarios.durations import Seconds, parse_duration
from harness.scenarios.lifting import Limits
from harness.scenarios.loader import (
    ScenarioError,
    YamlDocument,
    format_errors,
    load_scenario,
    load_yaml,
    parse_scenario,
    read_scenario,
    read_yaml,
)
from harness.scenarios.model import Scenario
from harness.scenarios.overlay import merge, write_overlay
from harness.scenarios.parts import (
    RUN_MODELS,
    Arrival,
    AudioPattern,
    Burst,
    CapacityLoss,
    ClientBehaviour,
    Diurnal,
    Organization,
    Poisson,
    PoolChange,
    Recorded,
    RunMix,
    SessionProfile,
)

__all__ = [
    "RUN_MODELS",
    "Arrival",
    "AudioPattern",
    "Burst",
    "CapacityLoss",
    "ClientBehaviour",
    "Diurnal",
    "Limits",
    "Organization",
    "Poisson",
    "PoolChange",
    "Recorded",
    "RunMix",
    "Scenario",
    "ScenarioError",
    "Seconds",
    "SessionProfile",
    "YamlDocument",
    "format_errors",
    "load_scenario",
    "load_yaml",
    "merge",
    "parse_duration",
    "parse_scenario",
    "read_scenario",
    "read_yaml",
    "write_overlay",
]
