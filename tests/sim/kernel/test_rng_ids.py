"""Seeded streams and ids: reproducible, independent, time-ordered (SIM-2, CONV-1)."""

from __future__ import annotations

import math
import random
import string
from datetime import UTC, datetime, timedelta
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from sim.clock import Clock
from sim.distributions import Constant, Distribution, Exponential, LogNormal, Uniform
from sim.ids import IdFactory, format_value
from sim.rng import RandomStreams, length_biased, sample, sample_length_biased, sampler

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.req("SIM-2")
def test_same_seed_same_draws_and_streams_are_independent() -> None:
    a, b = RandomStreams(7), RandomStreams(7)
    assert [a.stream("x").random() for _ in range(5)] == [b.stream("x").random() for _ in range(5)]
    # Drawing from a new stream in one family does not shift another stream.
    c, d = RandomStreams(7), RandomStreams(7)
    c.stream("other").random()
    assert c.stream("x").random() == d.stream("x").random()
    assert RandomStreams(8).stream("x").random() != RandomStreams(7).stream("x").random()


@pytest.mark.req("SIM-6")
@given(seed=st.integers(0, 2**32))
def test_samples_respect_their_distribution_bounds(seed: int) -> None:
    rng = RandomStreams(seed).stream("d")
    assert sample(Constant(value=3.0), rng) == 3.0
    assert 1.0 <= sample(Uniform(low=1.0, high=2.0), rng) <= 2.0
    assert sample(Exponential(mean=2.0), rng) >= 0
    assert 0 < sample(LogNormal(median=2.0, sigma=0.5, cap=4.0), rng) <= 4.0


#: One of each kind; the capped lognormal is capped about a third of the time.
DISTRIBUTIONS = [
    Constant(value=2.5),
    Exponential(mean=4.0),
    Uniform(low=1.0, high=3.0),
    LogNormal(median=4.0, sigma=0.6),
    LogNormal(median=4.0, sigma=0.6, cap=5.0),
]


@pytest.mark.req("SIM-2")
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_a_bound_sampler_draws_what_sample_draws(dist: Distribution) -> None:
    """``sampler`` (bound once, hot paths) and ``sample`` (one-off) give the same values from
    the same stream, draw by draw (2,000 each), the cap's ties included."""
    bound = sampler(dist, random.Random(3))
    rng = random.Random(3)
    draws = [bound() for _ in range(2000)]
    assert draws == [sample(dist, rng) for _ in range(2000)]
    if isinstance(dist, LogNormal) and dist.cap is not None:
        assert 100 < draws.count(dist.cap) < 1900


def _length_biased_by_hand(dist: Distribution, rng: random.Random) -> float:
    """A length-biased draw computed from scratch on each call, with the stdlib's samplers:
    what ``length_biased`` binds once and writes out must give exactly these values."""
    normal = NormalDist()
    match dist:
        case Constant():
            return dist.value
        case Exponential():
            rate = 1.0 / dist.mean_value
            return rng.expovariate(rate) + rng.expovariate(rate)
        case Uniform():
            low, high = dist.low, dist.high
            return math.sqrt(low * low + rng.random() * (high * high - low * low))
        case LogNormal(cap=None):
            return dist.median * math.exp(dist.sigma**2 + dist.sigma * rng.gauss(0.0, 1.0))
        case LogNormal():
            median, sigma, cap = dist.median, dist.sigma, dist.cap
            edge = math.log(cap / median) / sigma
            below = median * math.exp(sigma * sigma / 2) * normal.cdf(edge - sigma)
            at_cap = cap * (1.0 - normal.cdf(edge))
            if rng.random() * (below + at_cap) >= below:
                return cap
            u = (1.0 - rng.random()) * normal.cdf(edge - sigma)
            return median * math.exp(sigma * sigma + sigma * normal.inv_cdf(u))
    raise AssertionError(dist)


@pytest.mark.req("SIM-2")
@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_a_bound_length_biased_draw_is_the_draw_computed_afresh(dist: Distribution) -> None:
    """The same stream gives the same values, draw by draw, through ``length_biased`` bound
    once, through ``sample_length_biased`` and computed from scratch with the stdlib (2,000
    draws each, so both branches of the capped lognormal are taken)."""
    bound = length_biased(dist)
    rngs = [random.Random(5), random.Random(5), random.Random(5)]
    for _ in range(2000):
        expected = _length_biased_by_hand(dist, rngs[0])
        assert bound(rngs[1]) == expected
        assert sample_length_biased(dist, rngs[2]) == expected
    assert rngs[0].random() == rngs[1].random() == rngs[2].random()  # as many draws each


@pytest.mark.req("CONV-1", "SIM-1", "SIM-2")
def test_ids_are_prefixed_ulids_timed_by_the_virtual_clock() -> None:
    clock = Clock(EPOCH)
    ids = IdFactory(clock, RandomStreams(1).stream("ids"))
    clock.advance(3600)
    session_id = ids.new("session")
    assert session_id.startswith("sess_") and len(session_id) == len("sess_") + 26
    ulid = ULID.from_str(session_id.removeprefix("sess_"))
    assert ulid.datetime == datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    other_clock = Clock(EPOCH)
    again = IdFactory(other_clock, RandomStreams(1).stream("ids"))
    other_clock.advance(3600)
    assert again.new("session") == session_id
    assert ids.token("sk_live_").startswith("sk_live_")


@pytest.mark.req("CONV-1", "SIM-2")
@given(
    epoch_us=st.integers(-(10**15), 10**15),
    moments=st.lists(st.floats(0, 10**9, allow_nan=False), min_size=1, max_size=5),
)
def test_an_id_is_timed_at_the_clocks_epoch_ms(epoch_us: int, moments: list[float]) -> None:
    """``IdFactory.value`` and ``IdFactory.new`` write ``Clock.epoch_ms`` out in place: the same
    millisecond (``new`` also the same random stream as ``value``)."""
    clock = Clock(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=epoch_us))
    ids = IdFactory(clock, RandomStreams(1).stream("ids"))
    twin = IdFactory(clock, RandomStreams(1).stream("ids"))
    for moment in sorted(moments):
        clock.advance_to(moment)
        value = ids.value()
        assert value >> 80 == clock.epoch_ms()
        assert twin.new("session") == format_value("session", value)


@pytest.mark.req("SIM-2")
@given(seed=st.integers(0, 2**64), length=st.integers(0, 64), before=st.integers(0, 3))
def test_a_token_draws_what_random_choice_draws(seed: int, length: int, before: int) -> None:
    """``IdFactory.token`` writes ``random.choice`` out; the same characters from the same
    stream, and the stream left where ``choice`` leaves it."""
    ours, reference = random.Random(seed), random.Random(seed)
    for rng in (ours, reference):
        rng.getrandbits(before * 7 + 1)  # any position in the stream
    clock = Clock(EPOCH)
    token = IdFactory(clock, ours).token("tok_", length)
    alphabet = string.digits + string.ascii_letters
    assert token == "tok_" + "".join(reference.choice(alphabet) for _ in range(length))
    assert ours.getrandbits(64) == reference.getrandbits(64)
