"""The runner's clients: what each one does, and what it costs the simulation.

Clients are callbacks, not SimPy processes (``harness.runner.clients``): these tests hold the
behaviour that a callback-driven client could lose (a hang-up after an end the service made, a
retry that forgets its key, a hang-up at the wrong instant) and its cost in SimPy events.
"""

from __future__ import annotations

import gc
import itertools
from collections import Counter
from typing import Any

import pytest
import simpy

from harness.gc_policy import rare_collections
from harness.runner import play, run_scenario
from harness.scenarios import parse_scenario
from tests.scenarios.helpers import small


def _owner(callback: Any) -> str:
    """``harness`` when a callback is the runner's own code (a method of one of its objects, or
    the resume of a generator written in ``harness/``), else ``other``."""
    target = getattr(callback, "__self__", None)
    if isinstance(target, simpy.Process):
        code = target._generator.gi_code  # the process's generator
        return "harness" if "/harness/" in code.co_filename else "other"
    if target is not None and type(target).__module__.startswith("harness."):
        return "harness"
    module = getattr(callback, "__module__", "") or ""
    return "harness" if module.startswith("harness.") else "other"


def _event_owner(event: simpy.Event) -> str:
    if isinstance(event, simpy.Process):  # a process's own end: whose process it is
        return _owner(event._resume)
    owners = {_owner(callback) for callback in event.callbacks or ()}
    return "harness" if "harness" in owners else "other"


@pytest.mark.req("PERF-1", "NB-1")
def test_a_session_client_costs_two_simpy_events_its_arrival_and_its_hang_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every event the run processes is attributed to the runner or to the rest (the platform),
    from its callbacks. Without retries a session's client owns exactly two: the timer of its
    arrival and the timer of its hang-up (the create runs at the arrival, the first frame and
    the end reach it as the service's events). As SimPy processes the clients owned about six
    per session (the process's start and end, one event per awaited webhook, the hang-up)."""
    loaded = parse_scenario(
        small(
            duration="1h",
            cooldown="30m",
            sample_every="10m",
            config={"scheduler": {"workers": 40}},
            organizations=[{"name": "Big", "plan": "enterprise", "keys": 20, "concurrency": 20}],
            arrivals=[{"kind": "poisson", "rate_per_hour": 60}],
            sessions={"length": {"kind": "constant", "value": 120}, "surface": {"api": 1}},
            runs=[],
        )
    )
    owners: Counter[str] = Counter()
    step = simpy.Environment.step

    def counting_step(env: simpy.Environment) -> None:
        owners[_event_owner(env._queue[0][3])] += 1
        step(env)

    monkeypatch.setattr(simpy.Environment, "step", counting_step)
    raw = play(loaded)
    clients = list(raw.pool.clients or [])
    calls = list(raw.pool.calls or [])
    assert len(clients) > 30 and all(c.final_outcome == "ok" for c in clients)
    assert all(c.attempt == 1 for c in calls)  # no retries: nothing else is the clients'
    samples = len(raw.sampler)  # the sampler's grid is the runner's too
    hung_up = sum(1 for c in calls if c.operation == "endSession")
    assert hung_up == len(clients)
    assert owners["other"] > 0
    assert owners["harness"] <= len(clients) + hung_up + samples


@pytest.mark.req("NB-1", "NB-2")
def test_a_session_the_service_ends_first_is_never_ended_by_its_client() -> None:
    """The plan clamps every session to 60 s while its client means to talk for 300: the
    service ends them (``max_duration``) and the clients, told by the event, never hang up."""
    loaded = parse_scenario(
        small(
            sessions={"length": {"kind": "constant", "value": 300}, "max_duration_seconds": 60,
                      "surface": {"api": 2, "pipecat": 1, "playground": 1}},
            runs=[],
        )
    )  # fmt: skip
    result = run_scenario(loaded)
    started = result.sessions[result.sessions["first_frame_at"].notna()]
    assert len(started) > 3
    assert (started["end_reason"] == "max_duration").all()
    assert not (result.api_calls["operation"] == "endSession").any()
    assert (result.clients["planned_length"] == 300).all()


@pytest.mark.req("NB-1", "NB-2")
def test_each_client_hangs_up_exactly_its_planned_length_after_its_first_frame() -> None:
    loaded = parse_scenario(
        small(sessions={"length": {"kind": "lognormal", "median": 90, "sigma": 0.5, "cap": 400},
                        "surface": {"api": 2, "pipecat": 1, "embed": 1}},
              runs=[])
    )  # fmt: skip
    result = run_scenario(loaded)
    sessions = result.sessions.set_index("session_id")
    calls = result.api_calls
    ends = calls[calls["operation"] == "endSession"].set_index("resource_id")
    assert len(ends) > 5 and set(ends["surface"].dropna()) == set()
    talked = (ends["at"] - sessions.loc[ends.index, "first_frame_at"]).dt.total_seconds()
    planned = sessions.loc[ends.index, "planned_length"]
    assert (talked - planned).abs().max() < 1e-3  # instants are kept to the microsecond
    assert {"api", "pipecat", "embed"} <= set(sessions.loc[ends.index, "surface"])


@pytest.mark.req("NB-1", "NB-2")
def test_a_refused_run_create_is_retried_after_retry_after_with_the_same_key() -> None:
    """Run clients retry like session clients: a ``rate_limit`` refusal waits its Retry-After
    and the next attempt sends the same idempotency key."""
    loaded = parse_scenario(
        small(
            arrivals=[],
            config={"limits": {"rate": {"run_creates_per_window": 2}}},
            client={"max_attempts": 5, "base_delay": "1s", "honour_retry_after": True},
            runs=[{"model": "sim/echo-text", "rate_per_hour": 600}],
        )
    )
    calls = run_scenario(loaded).api_calls
    creates = calls[calls["operation"] == "createRun"]
    assert (creates["outcome"] == "rate_limited").sum() > 3
    retried = 0
    for _client, attempts in creates.groupby("client"):
        rows = attempts.sort_values("attempt").to_dict("records")
        assert len({r["idempotency_key"] for r in rows}) == 1
        assert rows[0]["idempotency_key"] == f"scn-{rows[0]['client']}"
        for before, after in itertools.pairwise(rows):
            retried += 1
            assert before["outcome"] == "rate_limited"
            assert after["t"] == pytest.approx(before["t"] + before["retry_after"])
    assert retried > 3


@pytest.mark.req("SIM-2")
def test_when_garbage_goes_changes_nothing_a_run_does() -> None:
    """A run under rare cycle collections (what the command line chooses) and one under the
    process's default make the same requests and arrivals."""
    first = play(parse_scenario(small()))
    with rare_collections():
        gc.collect()
        again = play(parse_scenario(small()))
    assert list(again.pool.calls or []) == list(first.pool.calls or [])
    assert list(again.pool.clients or []) == list(first.pool.clients or [])


@pytest.mark.req("NB-2")
def test_tallies_counted_from_the_logs_are_the_ones_counted_as_requests_are_made() -> None:
    """With logs, a run counts its per-interval tallies from them when read; without, as each
    request is made. The same scenario (refusals, retries, runs) gives the same tallies both
    ways, since the records level never changes what happens."""
    data = small(client={"max_attempts": 3, "base_delay": "2s", "jitter": 0.1})
    logged = play(parse_scenario({**data, "records": "full"}))
    counted = play(parse_scenario({**data, "records": "summary"}))
    assert logged.pool.calls is not None and counted.pool.calls is None
    assert logged.pool.tallies.calls == counted.pool.tallies.calls
    assert logged.pool.tallies.clients == counted.pool.tallies.clients
    assert logged.pool.tallies.attempts == counted.pool.tallies.attempts
    calls = counted.pool.tallies.calls
    assert {k[1] for k in calls} >= {"createSession", "endSession", "createRun"}
    assert any(not first for _slot, _op, _outcome, first in calls)  # retries were counted
    assert len({k[2] for k in calls}) > 1  # refusals too
    assert sum(counted.pool.tallies.clients.values()) == len(logged.pool.clients or [])


@pytest.mark.req("SIM-9")
def test_scheduled_faults_change_the_pool_at_their_instants() -> None:
    loaded = parse_scenario(
        small(faults=[{"kind": "capacity", "at": "5m", "workers": 1, "until": "10m"},
                      {"kind": "capacity", "at": "15m", "workers": 2}])
    )  # fmt: skip
    sampler = play(loaded).sampler
    capacity = dict(zip((round(at) for at in sampler.at), sampler.counts["capacity"], strict=True))
    assert [capacity[m * 60] for m in range(0, 5)] == [3] * 5
    assert [capacity[m * 60] for m in range(6, 10)] == [1] * 4
    assert [capacity[m * 60] for m in range(11, 15)] == [3] * 4
    assert [capacity[m * 60] for m in range(16, 25)] == [2] * 9
