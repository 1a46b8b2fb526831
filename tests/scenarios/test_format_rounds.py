"""NB-1: a scenario file is refused in one round, with lines; what theory checks need from the
format (limits switched off, a warm-up and measurement window, lengths not truncated)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from harness.runner import run_scenario
from harness.runner.metrics import summarize, summary_markdown
from harness.scenarios import ScenarioError, load_scenario, parse_duration, parse_scenario
from harness.scenarios.lifting import UNREACHABLE_COUNT
from tests.scenarios.helpers import small

BAD = """\
name: bad
duration: 1h1h
cooldown: 5m
config:
  scheduler:
    workers: -1
organizations:
  - {name: Acme, plan: pro}
  - {name: Acme, keys: 0}
arrivals:
  - {kind: poisson, rate_per_hour: .inf}
  - {kind: burst, organization: Nobody, at: 10m, count: 3}
sessions:
  length: {kind: exponential, mean: .nan}
  quality: {standard: .nan}
faults:
  - {kind: capacity, at: 20m, workers: 0, until: 10m}
"""


@pytest.mark.req("NB-1")
def test_every_problem_of_a_file_is_listed_at_once_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD, encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    found = dict(zip(info.value.problems, info.value.lines, strict=True))
    expected = {
        "duration: ": 2,
        "config.scheduler.workers: ": 6,
        "organizations[1].keys: ": 9,
        "organizations[1].name: 'Acme' is used twice": 9,
        "arrivals[0].rate_per_hour: ": 11,
        "arrivals[1].organization: no organization named 'Nobody'": 12,
        "sessions.length.mean: ": 14,
        "sessions.quality.standard: ": 15,
        "faults[0].until: must be after at": 17,
    }
    for start, line in expected.items():
        matches = [lines for problem, lines in found.items() if problem.startswith(start)]
        assert matches == [line], (start, found)
    text = str(info.value)
    assert text.startswith(f"{path}: invalid ({len(found)} problems)")
    assert f"{path}:12: arrivals[1].organization" in text
    assert info.value.lines == tuple(sorted(info.value.lines))  # in file order


@pytest.mark.req("NB-1")
@pytest.mark.parametrize("text", ["1h1h", "30m1h", "5s5s", "nan", "inf"])
def test_repeated_units_and_non_numbers_are_not_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.req("NB-1")
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_durations_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        parse_duration(value)


@pytest.mark.req("NB-1")
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"arrivals": [{"kind": "burst", "at": "19m", "count": 2, "within": "2m"}]},
         "arrivals[0].at: the burst ends at 1260 s, after the duration 1200 s"),
        ({"arrivals": [{"kind": "poisson", "rate_per_hour": 1, "start": "30m"}]},
         "arrivals[0].start: is not before the duration"),
        ({"arrivals": [{"kind": "poisson", "rate_per_hour": 1, "end": "30m"}]},
         "arrivals[0].end: is after the duration"),
        ({"faults": [{"kind": "capacity", "at": "25m", "workers": 1}]},
         "faults[0].at: is not before the duration"),
        ({"faults": [{"kind": "capacity", "at": "5m", "workers": 1, "until": "2h"}]},
         "faults[0].until: is after the end of the run (1500 s)"),
        ({"warmup": "20m"}, "warmup: must be shorter than the duration"),
        ({"warmup": "5m", "measure": "16m"}, "measure: the window ends at 1260 s"),
        ({"limits": {"concurrency": "off"}, "organizations": [{"name": "A", "concurrency": 3}]},
         "organizations[0].concurrency: a concurrency override has no effect"),
        ({"limits": {"queue": False}, "config": {"scheduler": {"admission_policy": "reject"}}},
         "limits.queue: the reject admission policy has no queue"),
        ({"limits": {"idle_timeout": "off"}, "sessions": {"idle_timeout_seconds": 30}},
         "sessions.idle_timeout_seconds: contradicts"),
        ({"client": {"jitter": math.nan}}, "client.jitter: "),
        ({"config": {"scheduler": {"worker_boot": {"kind": "constant", "value": math.inf}}}},
         "config.scheduler.worker_boot.value: must be a finite number"),
    ],
)  # fmt: skip
def test_events_outside_the_run_and_contradictions_are_refused(
    change: dict[str, object], expected: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(small(**change), "test.yaml")
    assert any(p.startswith(expected) for p in info.value.problems), info.value.problems


@pytest.mark.req("NB-1")
def test_limits_switched_off_are_beyond_reach_of_the_run() -> None:
    scenario = parse_scenario(
        small(
            limits={"concurrency": False, "queue": "off", "startup_timeout": "off", "rate": "off",
                    "idle_timeout": "off", "max_duration": "off"},
            sessions={"audio": None},
        )
    )  # fmt: skip
    config = scenario.sim_config()
    horizon = scenario.horizon
    assert horizon > scenario.duration + scenario.cooldown
    limits = config.limits
    assert limits.concurrent_sessions_per_key == UNREACHABLE_COUNT
    assert {p.concurrent_sessions for p in config.billing.plans} == {UNREACHABLE_COUNT}
    assert config.scheduler.max_queue_length == UNREACHABLE_COUNT
    assert limits.startup_timeout_seconds >= horizon
    assert limits.rate.session_creates_per_window is None
    assert limits.idle_timeout_max_seconds >= horizon
    assert scenario.session_profile().idle_timeout_seconds == horizon
    assert limits.max_duration_ceiling_seconds >= horizon
    assert min(p.max_session_duration_seconds for p in config.billing.plans) >= horizon
    # Untouched by default: the seed's values.
    plain = parse_scenario(small()).sim_config()
    assert plain.limits.concurrent_sessions_per_key == 1
    assert plain.limits.startup_timeout_seconds == 15


@pytest.mark.req("NB-1", "SES-ST-7")
def test_silent_sessions_run_their_length_when_the_idle_timer_is_off() -> None:
    data = small(
        sessions={"length": {"kind": "constant", "value": 300}, "audio": None,
                  "surface": {"api": 1}},
        limits={"idle_timeout": "off", "concurrency": "off"},
        runs=[],
    )  # fmt: skip
    started = run_scenario(parse_scenario(data)).sessions.dropna(subset=["first_frame_at"])
    assert len(started) > 0
    assert (started["end_reason"] == "client_request").all()
    assert (started["billable_seconds"] >= 300).all()


@pytest.mark.req("NB-1", "RES-SESS-3")
def test_lengths_are_not_cut_at_the_default_max_duration_unless_asked() -> None:
    """A client asks for its planned length; an explicit max_duration_seconds is obeyed."""
    base = {"length": {"kind": "constant", "value": 900}, "surface": {"api": 1}}
    pro = [{"name": "Acme", "plan": "pro", "keys": 3}]
    kept = run_scenario(parse_scenario(small(sessions=base, organizations=pro, runs=[])))
    ended = kept.sessions[kept.sessions["status"] == "ended"]
    assert len(ended) > 0 and (ended["end_reason"] == "client_request").all()
    asked = {**base, "max_duration_seconds": 600}
    cut = run_scenario(parse_scenario(small(sessions=asked, organizations=pro, runs=[])))
    ended = cut.sessions[cut.sessions["status"] == "ended"]
    assert len(ended) > 0 and (ended["end_reason"] == "max_duration").all()


@pytest.mark.req("NB-2")
def test_metrics_count_only_the_measurement_window() -> None:
    scenario = parse_scenario(small(warmup="5m", measure="10m", runs=[]))
    result = run_scenario(scenario)
    start, end = scenario.window()
    assert (start, end) == (300.0, 900.0)
    everything, window = summarize(result), summarize(result, scenario.window())
    arrived = result.clients[(result.clients["t"] >= start) & (result.clients["t"] < end)]
    assert window["session_clients"] == (arrived["kind"] == "session").sum()
    assert window["session_clients"] < everything["session_clients"]
    created = (result.sessions["created_at"] - result.intervals["at"].iloc[0]).dt.total_seconds()
    assert window["sessions_created"] == ((created >= start) & (created < end)).sum()
    text = summary_markdown(result, scenario.window())
    assert "Measured window [300 s, 900 s)" in text
    for rule in ("clients that arrived in the window", "sessions created in the window"):
        assert rule in text
    # One number format: counts with separators, proportions with four decimals.
    assert f"| sessions_created | {window['sessions_created']:,.0f} |" in text
    assert "| placement_wait_probability | " in text and "e+" not in text
