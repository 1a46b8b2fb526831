"""NB-4: the Erlang helper against published values and against the simulator itself."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.erlang import erlang_b, erlang_c, mean_wait_mmc, offered_load
from harness.runner import run_scenario
from harness.runner.metrics import summarize
from harness.scenarios import parse_scenario


def _direct_b(c: int, a: float) -> float:
    terms = [a**k / math.factorial(k) for k in range(c + 1)]
    return terms[-1] / sum(terms)


@pytest.mark.req("NB-4")
@pytest.mark.parametrize(
    ("servers", "load", "blocking"),
    [(1, 1.0, 0.5), (2, 1.0, 0.2), (4, 3.0, 0.206107), (10, 5.0, 0.018385), (5, 2.0, 0.036697)],
)
def test_erlang_b_known_values(servers: int, load: float, blocking: float) -> None:
    assert erlang_b(servers, load) == pytest.approx(blocking, abs=1e-6)


@pytest.mark.req("NB-4")
@settings(max_examples=50)
@given(st.integers(0, 40), st.floats(0, 60, allow_nan=False))
def test_erlang_b_recursion_equals_the_closed_form(servers: int, load: float) -> None:
    assert erlang_b(servers, load) == pytest.approx(_direct_b(servers, load), rel=1e-9, abs=1e-12)


@pytest.mark.req("NB-4")
def test_erlang_c_known_values() -> None:
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(10, 8.0) == pytest.approx(0.409, abs=1e-3)  # classic call-centre table
    assert erlang_c(3, 3.0) == 1.0  # unstable: everyone waits
    # M/M/1: P(wait) = rho and Wq = rho / (mu - lambda).
    assert erlang_c(1, 0.5) == pytest.approx(0.5)
    assert mean_wait_mmc(1, 0.5, 10.0) == pytest.approx(10.0)
    assert math.isinf(mean_wait_mmc(2, 2.0, 10.0))
    assert offered_load(120, 90) == pytest.approx(3.0)
    with pytest.raises(ValueError, match=">= 0"):
        erlang_b(-1, 1.0)


@pytest.mark.req("NB-4", "SIM-3")
def test_a_loss_system_blocks_as_erlang_b_predicts() -> None:
    """Reject policy, no retries, no boot or drain: blocking within 3 points of Erlang B."""
    scenario = parse_scenario(
        {
            "seed": 1,
            "duration": "12h",
            "sample_every": "10m",
            "config": {
                "scheduler": {
                    "workers": 4,
                    "admission_policy": "reject",
                    "max_queue_length": 0,
                    "worker_boot": {"kind": "constant", "value": 0},
                    "first_frame_latency": {"kind": "constant", "value": 0},
                },
                "sessions": {"drain_base_seconds": 0, "drain_max_seconds": 0},
                "limits": {"concurrent_sessions_per_key": 20,
                           "rate": {"session_creates_per_window": None}},
            },
            "organizations": [{"name": "Load", "plan": "enterprise", "concurrency": 20}],
            "arrivals": [{"kind": "poisson", "rate_per_hour": 80}],
            "sessions": {
                "length": {"kind": "exponential", "mean": 135},
                "audio": {"speech": {"kind": "constant", "value": 0},
                          "silence": {"kind": "constant", "value": 30}},
                "quality": {"mock": 1},
                "max_duration_seconds": 3600,
            },
        }
    )  # fmt: skip
    metrics = summarize(run_scenario(scenario))
    expected = erlang_b(4, offered_load(80, 135))  # a = 3 Erlangs → 0.206
    assert metrics["first_attempt_at_capacity_rate"] == pytest.approx(expected, abs=0.03)
    assert metrics["no_capacity"] == 0
