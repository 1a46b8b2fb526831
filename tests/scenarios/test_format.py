"""NB-1: scenario files are typed data; invalid ones are refused naming the field."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.scenarios import (
    Burst,
    Diurnal,
    Poisson,
    ScenarioError,
    load_scenario,
    parse_duration,
    parse_scenario,
    parts,
)
from harness.sweep import load_sweep
from sim.config import BILLING_SURFACES, QUALITIES
from tests.scenarios.helpers import small

ROOT = Path(__file__).resolve().parents[2]


def _problems(data: Any) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data, "test.yaml")
    assert str(info.value).startswith("test.yaml: invalid")
    return list(info.value.problems)


@pytest.mark.req("NB-1")
def test_a_full_scenario_parses_every_part() -> None:
    scenario = parse_scenario(small())
    assert scenario.duration == 1200 and scenario.cooldown == 300
    assert [o.name for o in scenario.organizations] == ["Acme", "Bistro"]
    assert isinstance(scenario.arrivals[0], Poisson)
    assert isinstance(scenario.arrivals[1], Burst) and scenario.arrivals[1].within == 30
    assert scenario.client.max_attempts == 3 and scenario.client.honour_retry_after
    assert scenario.sim_config().scheduler.workers == 3
    assert scenario.sim_config(99).seed == 99


@pytest.mark.req("NB-1")
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"organizations": [{"name": "A"}, {"name": "B", "plan": "gold"}]},
         "organizations[1].plan: unknown plan 'gold'"),
        ({"organizations": [{"name": "A", "keys": 0}]}, "organizations[0].keys: "),
        ({"organizations": [{"name": "A", "concurrency": 50}]},
         "organizations[0].concurrency: 50 exceeds"),
        ({"arrivals": [{"kind": "poisson", "rate_per_hour": -1}]},
         "arrivals[0].rate_per_hour: "),
        ({"arrivals": [{"kind": "poisson", "rate_per_hour": 1, "organization": "Nobody"}]},
         "arrivals[0].organization: no organization named 'Nobody'"),
        ({"arrivals": [{"kind": "diurnal", "base_rate_per_hour": 1, "profile": [1] * 23}]},
         "arrivals[0].profile: "),
        ({"arrivals": [{"kind": "tidal"}]}, "arrivals[0]: "),
        ({"duration": "2hr"}, "duration: '2hr' is not a duration"),
        ({"config": {"scheduler": {"workers": -1}}}, "config.scheduler.workers: "),
        ({"config": {"seed": 4}}, "config: set the seed at the top level"),
        ({"sessions": {"length": {"kind": "exponential", "mean": 0}}}, "sessions.length.mean: "),
        ({"sessions": {"quality": {"ultra": 1}}}, "sessions.quality: unknown quality ultra"),
        ({"sessions": {"surface": {"api": 0}}}, "sessions.surface: weights must be"),
        ({"client": {"max_attempts": 0}}, "client.max_attempts: "),
        ({"runs": [{"model": "sim/portrait-video", "rate_per_hour": 1}]}, "runs[0].model: "),
        ({"colour": "blue"}, "colour: Extra inputs are not permitted"),
        ({"usage_timezones": ["Mars/Olympus"]}, "usage_timezones: unknown IANA timezone"),
        ({"duration": "400d"}, "duration: with usage_timezones the run must fit"),
    ],
)  # fmt: skip
def test_invalid_fields_are_named(change: dict[str, Any], expected: str) -> None:
    problems = _problems(small(**change))
    assert any(p.startswith(expected) for p in problems), problems


@pytest.mark.req("NB-1", "SIM-6")
def test_the_mixes_accept_exactly_the_configured_sets() -> None:
    """The quality and surface mixes are checked against the configuration's sets (defined once
    there), so a tier or surface added to the service is accepted by scenarios too."""
    assert parts.QUALITIES is QUALITIES and parts.BILLING_SURFACES is BILLING_SURFACES
    every = {"quality": dict.fromkeys(QUALITIES, 1), "surface": dict.fromkeys(BILLING_SURFACES, 1)}
    profile = parse_scenario(small(sessions=every)).sessions
    assert tuple(profile.quality) == QUALITIES and tuple(profile.surface) == BILLING_SURFACES


@pytest.mark.req("NB-1")
def test_not_a_mapping_and_bad_yaml_are_refused(tmp_path: Path) -> None:
    assert _problems([1, 2]) == ["the file must hold a mapping of scenario fields"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: [1\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


@pytest.mark.req("NB-1")
@pytest.mark.parametrize(
    ("text", "seconds"),
    [(90, 90.0), (1.5, 1.5), ("90s", 90.0), ("15m", 900.0), ("2h30m", 9000.0), ("30d", 2592000.0),
     ("1h 30m", 5400.0)],
)  # fmt: skip
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.req("NB-1")
@settings(max_examples=40)
@given(st.integers(0, 40), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_duration_strings_add_their_parts(d: int, h: int, m: int, s: int) -> None:
    assert parse_duration(f"{d}d{h}h{m}m{s}s") == d * 86400 + h * 3600 + m * 60 + s


@pytest.mark.req("NB-1")
@pytest.mark.parametrize("bad", ["", "h", "5x", "-5s", True, None, [1]])
def test_bad_durations(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


@pytest.mark.req("NB-1")
@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.name)
def test_example_scenarios_are_valid(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.duration > 0


@pytest.mark.req("NB-1", "NB-3")
@pytest.mark.parametrize("path", sorted((ROOT / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_example_sweeps_are_valid(path: Path) -> None:
    sweep, _base, points = load_sweep(path)
    assert len(points) == math.prod(len(values) for values in sweep.grid.values())


@pytest.mark.req("NB-1")
def test_diurnal_profile_is_kept() -> None:
    profile = [float(h) for h in range(24)]
    scenario = parse_scenario(
        small(arrivals=[{"kind": "diurnal", "base_rate_per_hour": 2, "profile": profile}])
    )
    arrival = scenario.arrivals[0]
    assert isinstance(arrival, Diurnal) and arrival.profile[5] == 5.0
