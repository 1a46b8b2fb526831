"""NB-4: the Erlang helper against published values and against the simulator itself."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from harness.erlang import (
    erlang_a,
    erlang_b,
    erlang_c,
    mean_wait_mmc,
    mmc_deterministic_patience,
    offered_load,
)


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


# -- M/M/c+D and Erlang A ------------------------------------------------------------------------


def _general_j(servers: int, rate: float, mu: float, survival_integral: Any) -> float:
    """J of the M/M/n+G formulas by numerical quadrature of exp(λ·H(x) - cμx)."""
    value, _error = integrate.quad(
        lambda x: math.exp(rate * survival_integral(x) - servers * mu * x), 0, math.inf, limit=200
    )
    return float(value)


def _general(servers: int, rate: float, mu: float, h: Any) -> tuple[float, float]:
    """(P(wait), P(abandon)) of M/M/n+G from its published form, J by quadrature."""
    j = _general_j(servers, rate, mu, h)
    e = 1 / _direct_b(servers - 1, rate / mu)
    return rate * j / (e + rate * j), (1 + (rate - servers * mu) * j) / (e + rate * j)


PARAMETERS = [(1, 0.05, 10.0), (4, 0.3, 10.0), (4, 0.45, 10.0), (8, 0.9, 7.5), (3, 0.5, 10.0)]


@pytest.mark.req("NB-4")
@pytest.mark.parametrize(("servers", "rate", "mean_service"), PARAMETERS)
@pytest.mark.parametrize("patience", [0.5, 5.0, 15.0, 60.0])
def test_deterministic_patience_matches_the_general_formula_by_quadrature(
    servers: int, rate: float, mean_service: float, patience: float
) -> None:
    got = mmc_deterministic_patience(servers, rate, mean_service, patience)
    p_wait, p_abandon = _general(servers, rate, 1 / mean_service, lambda x: min(x, patience))
    assert got.p_wait == pytest.approx(p_wait, rel=1e-6)
    # The published form computes P(abandon) as 1 + (λ - cμ)J, which cancels when it is tiny.
    assert got.p_abandon == pytest.approx(p_abandon, rel=1e-6, abs=1e-9)


@pytest.mark.req("NB-4")
def test_deterministic_patience_limits_are_erlang_b_and_erlang_c() -> None:
    c, a, mean = 4, 3.0, 10.0
    none = mmc_deterministic_patience(c, a / mean, mean, 0.0)
    assert none.p_abandon == pytest.approx(erlang_b(c, a), rel=1e-12)  # no patience: a loss system
    assert none.mean_wait == 0
    endless = mmc_deterministic_patience(c, a / mean, mean, 1e5)
    assert endless.p_wait == pytest.approx(erlang_c(c, a), rel=1e-9)
    assert endless.p_abandon < 1e-12
    assert endless.mean_wait_served == pytest.approx(mean_wait_mmc(c, a, mean), rel=1e-9)
    # At exactly c·mu = lambda the closed form has a removable singularity.
    critical = mmc_deterministic_patience(c, c / mean, mean, 15.0)
    near = mmc_deterministic_patience(c, c / mean * (1 + 1e-7), mean, 15.0)
    assert critical.p_abandon == pytest.approx(near.p_abandon, rel=1e-5)
    # Overloaded (a > c) with long patience: no overflow, most customers abandon.
    overloaded = mmc_deterministic_patience(2, 1.0, 10.0, 1e4)
    assert overloaded.p_abandon == pytest.approx(1 - 2 / 10, rel=1e-6)  # served at rate c·mu


def _ctmc_erlang_a(servers: int, rate: float, mu: float, theta: float) -> tuple[float, float]:
    """(P(wait), P(abandon)) of M/M/c+M by solving its birth-death chain numerically."""
    size = servers + 400
    weights = [1.0]
    for n in range(1, size):
        death = min(n, servers) * mu + max(n - servers, 0) * theta
        weights.append(weights[-1] * rate / death)
    total = sum(weights)
    probabilities = [w / total for w in weights]
    p_wait = sum(probabilities[servers:])
    queue = sum((n - servers) * p for n, p in enumerate(probabilities) if n > servers)
    return p_wait, theta * queue / rate


@pytest.mark.req("NB-4")
@pytest.mark.parametrize(("servers", "rate", "mean_service"), PARAMETERS)
@pytest.mark.parametrize("mean_patience", [2.0, 15.0, 120.0])
def test_erlang_a_matches_its_markov_chain(
    servers: int, rate: float, mean_service: float, mean_patience: float
) -> None:
    got = erlang_a(servers, rate, mean_service, mean_patience)
    p_wait, p_abandon = _ctmc_erlang_a(servers, rate, 1 / mean_service, 1 / mean_patience)
    assert got.p_wait == pytest.approx(p_wait, rel=1e-9)
    assert got.p_abandon == pytest.approx(p_abandon, rel=1e-7)
    assert got.mean_wait == pytest.approx(p_abandon * mean_patience, rel=1e-7)
    assert got.mean_wait_served is None


@pytest.mark.req("NB-4")
def test_erlang_a_limits_and_bad_input() -> None:
    c, a, mean = 4, 3.0, 10.0
    assert erlang_a(c, a / mean, mean, 1e-6).p_abandon == pytest.approx(erlang_b(c, a), rel=1e-4)
    assert erlang_a(c, a / mean, mean, 1e7).p_wait == pytest.approx(erlang_c(c, a), rel=1e-4)
    assert erlang_a(c, 0.0, mean, 10.0).p_wait == 0
    assert mmc_deterministic_patience(c, 0.0, mean, 10.0).p_abandon == 0
    for bad in ((0, 1.0, 1.0, 1.0), (1, -1.0, 1.0, 1.0), (1, 1.0, 0.0, 1.0), (1, 1.0, 1.0, 0.0)):
        with pytest.raises(ValueError, match=r"must be|needed"):
            erlang_a(*bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="patience"):
        mmc_deterministic_patience(1, 1.0, 1.0, -1.0)


def _simpy_mmc_d(
    servers: int, rate: float, mean_service: float, patience: float, customers: int, seed: int
) -> tuple[float, float, float]:
    """A bare SimPy M/M/c+D queue, independent of the simulator: (P(wait), P(abandon), mean
    wait of the served), over ``customers`` arrivals after as many again of warm-up."""
    env = simpy.Environment()
    pool = simpy.Resource(env, capacity=servers)
    rng = random.Random(seed)
    waited: list[float] = []
    abandoned: list[bool] = []

    def customer(measured: bool) -> Any:
        arrived = env.now
        request = pool.request()
        outcome = yield request | env.timeout(patience)
        if request not in outcome:
            request.cancel()
            if measured:
                abandoned.append(True)
                waited.append(patience)
            return
        if measured:
            abandoned.append(False)
            waited.append(env.now - arrived)
        yield env.timeout(rng.expovariate(1 / mean_service))
        pool.release(request)

    def source() -> Any:
        for index in range(2 * customers):
            yield env.timeout(rng.expovariate(rate))
            env.process(customer(index >= customers))

    env.process(source())
    env.run()
    served = [w for w, gone in zip(waited, abandoned, strict=True) if not gone]
    return (
        sum(1 for w in waited if w > 0) / len(waited),
        sum(abandoned) / len(abandoned),
        sum(served) / len(served),
    )


@pytest.mark.req("NB-4")
def test_deterministic_patience_agrees_with_a_bare_simpy_queue() -> None:
    """z statistics over 8 independent replications (fixed seeds) of a plain SimPy model."""
    servers, rate, mean, patience = 3, 0.5, 10.0, 15.0  # a = 5 > c: abandonment matters
    theory = mmc_deterministic_patience(servers, rate, mean, patience)
    runs = [_simpy_mmc_d(servers, rate, mean, patience, 6000, seed) for seed in range(8)]
    for index, expected in enumerate((theory.p_wait, theory.p_abandon, theory.mean_wait_served)):
        values = [run[index] for run in runs]
        z = (statistics.fmean(values) - expected) / (statistics.stdev(values) / math.sqrt(8))
        assert abs(z) < 4, (index, statistics.fmean(values), expected, z)
