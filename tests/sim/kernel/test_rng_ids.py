"""Seeded streams and ids: reproducible, independent, time-ordered (SIM-2, CONV-1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from sim.clock import Clock
from sim.config import Constant, Exponential, LogNormal, Uniform
from sim.ids import IdFactory, format_value
from sim.rng import RandomStreams, sample

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
