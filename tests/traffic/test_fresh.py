"""NB-15: fresh days drawn from a recording (rates fitted per step with their uncertainty, or a
block bootstrap across days), and Poisson rates estimated from recorded days."""

from __future__ import annotations

import random
import statistics

import numpy as np
import pandas as pd
import pytest

from harness.runner.arrivals import arrival_times, recorded_sessions
from harness.scenarios import Poisson, Recorded
from harness.traffic.fit import bayesian_blocks, fit_rate_profile
from harness.traffic.fresh import fitted_profile, fresh_recording
from harness.traffic.recording import Recording, recording_from_frame
from sim.config import SimConfig

pytestmark = pytest.mark.req("NB-15")

EPOCH = SimConfig().epoch


def _poisson(rates: list[float], rng: random.Random, hour: float = 3600.0) -> list[float]:
    times: list[float] = []
    for index, rate in enumerate(rates):
        t = index * hour + rng.expovariate(rate / hour)
        while t < (index + 1) * hour:
            times.append(t)
            t += rng.expovariate(rate / hour)
    return times


def _recording(times: list[float], seed: int = 0) -> Recording:
    lengths = np.random.default_rng(seed).integers(60, 600, len(times)).astype(float)
    frame = pd.DataFrame({"offset_seconds": sorted(times), "length_seconds": lengths})
    return recording_from_frame(frame, "test")


def test_each_step_gets_its_rate_and_a_flash_crowd_a_block_of_its_own() -> None:
    rng = random.Random(1)
    times = _poisson([60, 120, 180, 120], rng)
    times += [8400 + rng.uniform(0, 240) for _ in range(40)]  # 40 within 4 minutes at 02:20
    profile = fit_rate_profile(times, 4 * 3600)
    assert profile.days == 1 and profile.length == 4 * 3600
    crowd = [p for p in profile.pieces if p.start <= 8400 < p.end]
    assert len(crowd) == 1 and crowd[0].end - crowd[0].start <= 6 * 60
    assert crowd[0].rate * 3600 > 500
    # Every step keeps its own count, and the fitted pieces hold every arrival.
    for hour in range(4):
        inside = [t for t in times if hour * 3600 <= t < (hour + 1) * 3600]
        assert profile.expected(hour * 3600, (hour + 1) * 3600) == pytest.approx(len(inside))
    assert sum(p.count for p in profile.pieces) == len(times)


def test_a_stationary_day_is_not_cut_up_by_chance() -> None:
    """Over 24 stationary hours at 50 an hour, Bayesian Blocks at a 5 % false-alarm rate per
    change point splits about one hour in twenty: across 10 recorded days (240 hours), no more
    extra blocks than 5 % of them plus three binomial standard deviations."""
    extra = 0
    for seed in range(10):
        times = _poisson([50.0] * 24, random.Random(seed))
        extra += len(fit_rate_profile(times, 86_400).pieces) - 24
    assert extra <= 240 * 0.05 + 3 * (240 * 0.05 * 0.95) ** 0.5
    # A rate that triples in the middle of an hour is found within a few minutes.
    counts = [1.0] * 30 + [3.0] * 30
    assert bayesian_blocks(counts, [60.0] * 60) == [0, 30]


def test_fitted_days_vary_as_the_rate_and_poisson_noise_do() -> None:
    """A recorded hour of N arrivals: fresh hours average N + 1/2 (Jeffreys' posterior mean)
    with variance about 2N (Poisson noise plus the rate's own uncertainty, the negative
    binomial predictive), over n = 400 fresh days; lengths come from the recording."""
    times = _poisson([50.0], random.Random(4))
    recording = _recording(times)
    counts = []
    recorded_lengths = set(recording.frame["length_seconds"])
    for seed in range(400):
        fresh = fresh_recording(recording, "fitted", random.Random(seed), step=3600)
        counts.append(len(fresh))
        if seed < 5:
            assert set(fresh.frame["length_seconds"]) <= recorded_lengths
            assert fresh.frame["offset_seconds"].is_monotonic_increasing
    n = len(times)
    assert statistics.fmean(counts) == pytest.approx(n + 0.5, rel=0.06)
    assert 1.5 * n < statistics.variance(counts) < 2.6 * n
    again = fresh_recording(recording, "fitted", random.Random(7), step=3600)
    pd.testing.assert_frame_equal(
        again.frame, fresh_recording(recording, "fitted", random.Random(7), step=3600).frame
    )
    assert fitted_profile(recording, step=3600) is fitted_profile(recording, step=3600)


def test_a_bootstrap_day_takes_each_step_from_a_recorded_day() -> None:
    rng = random.Random(2)
    first, second = _poisson([30.0] * 24, rng), _poisson([90.0] * 24, rng)
    recording = _recording(first + [t + 86_400 for t in second])
    steps_seen = set()
    for seed in range(20):
        fresh = fresh_recording(recording, "bootstrap", random.Random(seed))
        offsets = fresh.frame["offset_seconds"].to_numpy()
        for day in range(2):
            for hour in range(24):
                low = day * 86_400 + hour * 3600
                inside = sorted(offsets[(offsets >= low) & (offsets < low + 3600)] - low)
                mine = [sorted(t - hour * 3600 for t in d if hour * 3600 <= t < (hour + 1) * 3600)
                        for d in (first, second)]  # fmt: skip
                same = [len(m) == len(inside) and np.allclose(m, inside) for m in mine]
                assert any(same), (day, hour)
                steps_seen.add(same.index(True))
    assert steps_seen == {0, 1}
    # One recorded day: nothing to draw from, the day itself.
    single = _recording(first)
    fresh = fresh_recording(single, "bootstrap", random.Random(3))
    assert fresh.frame["offset_seconds"].tolist() == single.frame["offset_seconds"].tolist()


def test_a_recorded_arrival_plays_a_fresh_day_each_run_unless_exact() -> None:
    recording = _recording(_poisson([50.0, 80.0], random.Random(5)))
    arrival = Recorded(path="x.parquet", demand="fitted")
    days = [
        [at for at, _ in recorded_sessions(arrival, recording, 7200.0, random.Random(s))]
        for s in range(3)
    ]
    assert len({len(d) for d in days}) > 1 or days[0] != days[1]
    exact = Recorded(path="x.parquet")
    played = [at for at, _ in recorded_sessions(exact, recording, 7200.0, random.Random(0))]
    assert played == recording.frame["offset_seconds"].tolist()


def test_a_rate_estimated_from_recorded_days_is_drawn_from_its_posterior() -> None:
    """50 an hour over one hour, estimated from 1 day (posterior Gamma(50.5, 1 h)) or from 25:
    the run-to-run variance of the count is about 2λ from one day, about λ from 25."""
    spreads = {}
    for days in (1, 25):
        arrival = Poisson(rate_per_hour=50, end=3600, estimated_from_days=days)
        counts = [len(arrival_times(arrival, 3600, EPOCH, random.Random(s))) for s in range(400)]
        spreads[days] = statistics.variance(counts) / 50
    assert 1.5 < spreads[1] < 2.6 and 0.75 < spreads[25] < 1.35
    known = Poisson(rate_per_hour=50, end=3600)
    assert arrival_times(known, 3600, EPOCH, random.Random(1)) != arrival_times(
        Poisson(rate_per_hour=50, end=3600, estimated_from_days=1), 3600, EPOCH, random.Random(1)
    )
