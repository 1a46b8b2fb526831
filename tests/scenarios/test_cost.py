"""The runner's simulated cost does not grow with simulated duration (DESIGN.md, cost model).

A client publishes its whole talk-spurt timeline at the first frame and sets one timer for its
planned length; the pool is sampled by one process. So sessions 50 times longer, with 50 times
more talk-spurts, schedule the same number of events.
"""

from __future__ import annotations

import sys

import pytest

from harness.runner import simulate
from harness.scenarios import parse_scenario
from tests.scenarios.helpers import small


def _events(length: float) -> tuple[int, int]:
    scenario = parse_scenario(
        small(
            duration="3h",
            cooldown="2h",
            sample_every="5h",
            config={"scheduler": {"workers": 30}},
            organizations=[{"name": "Big", "plan": "enterprise", "keys": 30, "concurrency": 20}],
            arrivals=[{"kind": "burst", "at": 0, "count": 20, "within": "10m"}],
            sessions={
                "length": {"kind": "constant", "value": length},
                "max_duration_seconds": 3600,
                "surface": {"api": 1},
            },
            runs=[],
        )
    )
    raw = simulate(scenario)
    started = sum(1 for e in raw.platform.kernel.events if e.type == "session.first_frame")
    return raw.platform.clock.scheduled_events, started


@pytest.mark.req("NB-1")
def test_fifty_times_longer_sessions_cost_the_same_events() -> None:
    short, started_short = _events(60.0)
    long, started_long = _events(3000.0)
    assert started_short == started_long == 20
    assert long <= short * 1.05 + 5


def _calls(length: float) -> int:
    """Every Python and C function call a whole run makes (a deterministic cost count)."""
    scenario = parse_scenario(
        small(
            duration="3h",
            cooldown="2h",
            sample_every="5h",
            config={"scheduler": {"workers": 30}},
            organizations=[{"name": "Big", "plan": "enterprise", "keys": 30, "concurrency": 20}],
            arrivals=[{"kind": "burst", "at": 0, "count": 20, "within": "10m"}],
            sessions={
                "length": {"kind": "constant", "value": length},
                "max_duration_seconds": 3600,
                "surface": {"api": 1},
                "audio": {  # talking all the time, in 3-second spurts and 1-second pauses
                    "speech": {"kind": "exponential", "mean": 3},
                    "silence": {"kind": "exponential", "mean": 1},
                },
            },
            runs=[],
        )
    )
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        raw = simulate(scenario)
    finally:
        sys.setprofile(None)
    started = sum(1 for e in raw.platform.kernel.events if e.type == "session.first_frame")
    assert started == 20
    return count


@pytest.mark.req("PERF-1", "NB-1")
def test_fifty_times_longer_talking_sessions_cost_the_same_calls() -> None:
    """With talk-spurt audio on, a session of 50 minutes (about 750 spurts) makes as many
    calls as one of a minute (about 15): the client hands its pattern over in one call."""
    short = _calls(60.0)
    long = _calls(3000.0)
    assert long <= short * 1.05
