"""The runner's simulated cost does not grow with simulated duration (the cost model).

A client hands its whole talk-spurt pattern to the session at the first frame, in one call, and
sets one timer for its planned length; the pool is sampled on one fixed grid. So sessions 50 times
longer, with 50 times more talk-spurts, schedule the same number of events and make the same
number of calls.
"""

from __future__ import annotations

import sys

import pytest

from harness.runner import Played, play
from harness.scenarios import parse_scenario
from tests.scenarios.helpers import small

#: Talking all the time, in 3-second spurts and 1-second pauses.
TALKING = {
    "speech": {"kind": "exponential", "mean": 3},
    "silence": {"kind": "exponential", "mean": 1},
}


def _run(length: float, *, profile: bool = False) -> tuple[Played, int]:
    """Twenty sessions of ``length`` seconds with talk-spurt audio; with ``profile``, also
    every Python and C function call the run makes (a deterministic cost count)."""
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
                "audio": TALKING,
            },
            runs=[],
        )
    )
    calls = 0

    def count(_frame: object, event: str, _arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    if profile:
        sys.setprofile(count)
    try:
        raw = play(scenario)
    finally:
        sys.setprofile(None)
    started = sum(1 for e in raw.platform.kernel.events if e.type == "session.first_frame")
    assert started == 20
    return raw, calls


@pytest.mark.req("NB-1", "PERF-1")
def test_fifty_times_longer_sessions_cost_the_same_events() -> None:
    short = _run(60.0)[0].platform.clock.scheduled_events
    long = _run(3000.0)[0].platform.clock.scheduled_events
    assert long <= short * 1.05 + 5


@pytest.mark.req("PERF-1", "NB-1")
def test_fifty_times_longer_talking_sessions_cost_the_same_calls() -> None:
    """A session of 50 minutes (about 750 spurts) makes as many calls as one of a minute
    (about 15): the client hands its pattern over in one call."""
    short = _run(60.0, profile=True)[1]
    long = _run(3000.0, profile=True)[1]
    assert long <= short * 1.05
