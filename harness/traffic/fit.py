"""Fitting recorded traffic: the arrival rate over the day, and a distribution to a sample.

**A recording is one sample of demand.** To plan for tomorrow, a plan draws fresh days from what
the recorded days say, rather than replaying the one day recorded (NB-15, PLAN-6). This module
fits what those draws need:

- **The arrival rate over a period** (a day by default): the recorded arrivals are counted in
  bins of ``BIN_SECONDS`` at each position of the period, pooled over the recorded days; each
  step of the period (an hour by default: the staffing interval) gets a rate of its own, as
  per-interval staffing assumes, and within a step the bins are segmented into blocks of
  constant rate by **Bayesian Blocks** (J. D. Scargle, J. P. Norris,
  B. Jackson and J. Chiang, "Studies in astronomical time series analysis. VI. Bayesian block
  representations", ApJ 764 (2013) 167): the optimal partition by dynamic programming, each
  block's fitness its Poisson log-likelihood ``N (ln N - ln T)`` (N arrivals over an exposure
  of T seconds), each further block paying the prior ``4 - ln(73.53 p0 n^-0.478)`` (their
  eq. 21, n bins of the step) with a false-alarm probability ``p0`` of 5 %. A flash crowd the
  recording shows is kept as a block of its own; the wobble of a stationary hour is not. (Why
  steps first: over a whole day the prior can merge two hours whose rates differ by a half, a
  change one recorded day does not show beyond doubt; a plan sizes each step anyway, so each
  step's own count is the least it should keep.)
- **Each block's rate and what is not known of it**: with N arrivals over an exposure T, the
  rate's posterior under Jeffreys' prior is ``Gamma(N + 1/2, T)``; a fresh day draws its rates
  from it, then Poisson arrivals at them, so the day varies as the Poisson-gamma (negative
  binomial) predictive does (A. Gelman et al., *Bayesian Data Analysis*, 3rd ed., sec. 2.6):
  Poisson noise and the rate's own uncertainty, which one recorded day leaves wide.
- **A distribution of durations** (``fit_lognormal``): a lognormal by maximum likelihood (the
  mean and standard deviation of the logarithms), its quality the Kolmogorov-Smirnov distance
  with n and a p-value from a parametric bootstrap, since the parameters come from the same
  sample and the classical KS table would be far too kind (H. W. Lilliefors, JASA 62 (1967)
  399-402; G. J. Babu and C. R. Rao, Sankhya 66 (2004) 63-74; A. Zeimbekakis, E. D. Schifano
  and J. Yan, "On misuses of the Kolmogorov-Smirnov test for one-sample goodness-of-fit",
  The American Statistician, 2024).

What it does not cover, said where a plan reports it: days that differ beyond Poisson noise (a
busy Monday against a quiet Sunday) only a block bootstrap across several recorded days shows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BIN_SECONDS",
    "DAY",
    "FALSE_ALARM",
    "LogNormalFit",
    "Piece",
    "RateProfile",
    "bayesian_blocks",
    "fit_lognormal",
    "fit_rate_profile",
]

#: The finest resolution of a fitted rate: arrivals are counted per minute.
BIN_SECONDS = 60.0
#: The period a recording is folded on unless told otherwise: a day.
DAY = 86_400.0
#: Bayesian Blocks' false-alarm probability per change point (Scargle et al., eq. 21).
FALSE_ALARM = 0.05
#: Parametric bootstrap samples behind a KS p-value.
_BOOTSTRAP = 400


def bayesian_blocks(
    counts: Sequence[float] | np.ndarray[Any, Any],
    exposure: Sequence[float] | np.ndarray[Any, Any],
    p0: float = FALSE_ALARM,
) -> list[int]:
    """The first bin of each block of the optimal partition of ``counts`` (arrivals per bin)
    observed over ``exposure`` (seconds per bin, > 0), by Scargle et al.'s dynamic programme."""
    n = len(counts)
    if n == 0:
        return []
    prior = 4.0 - math.log(73.53 * p0 * n**-0.478)
    cum_counts = np.concatenate([[0.0], np.cumsum(np.asarray(counts, dtype=float))])
    cum_exposure = np.concatenate([[0.0], np.cumsum(np.asarray(exposure, dtype=float))])
    best = np.zeros(n)
    last = np.zeros(n, dtype=int)
    for r in range(n):
        arrivals = cum_counts[r + 1] - cum_counts[: r + 1]  # the blocks [i, r], i = 0..r
        seconds = cum_exposure[r + 1] - cum_exposure[: r + 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            fitness = np.where(arrivals > 0, arrivals * (np.log(arrivals) - np.log(seconds)), 0.0)
        total = fitness - prior + np.concatenate([[0.0], best[:r]])
        start = int(np.argmax(total))
        best[r], last[r] = total[start], start
    starts: list[int] = []
    end = n
    while end > 0:
        start = int(last[end - 1])
        starts.append(start)
        end = start
    return sorted(starts)


@dataclass(frozen=True, slots=True)
class Piece:
    """A block of constant rate, ``[start, end)`` seconds into the period: ``count`` arrivals
    recorded in it over all the days that cover it, ``exposure`` the seconds observed."""

    start: float
    end: float
    count: float
    exposure: float

    @property
    def rate(self) -> float:
        """The rate's estimate, per second (the count over the exposure)."""
        return self.count / self.exposure if self.exposure > 0 else 0.0

    def draw(self, rng: random.Random) -> float:
        """A rate drawn from its posterior, per second (Jeffreys' prior: Gamma(N + 1/2, T))."""
        if self.exposure <= 0:
            return 0.0
        return rng.gammavariate(self.count + 0.5, 1.0 / self.exposure)


@dataclass(frozen=True)
class RateProfile:
    """The arrival rate over one period as blocks (``pieces``, covering ``[0, length)``),
    fitted from ``days`` recorded periods; ``length`` is the period, or less when the recording
    is shorter than one."""

    pieces: tuple[Piece, ...]
    length: float
    days: int

    def expected(self, start: float, end: float) -> float:
        """The expected arrivals in ``[start, end)`` of the period (the estimated rates)."""
        return sum(p.rate * max(0.0, min(end, p.end) - max(start, p.start)) for p in self.pieces)

    def instants(self, rng: random.Random, offset: float = 0.0) -> list[float]:
        """One fresh period's arrival instants (each block's rate drawn from its posterior,
        then Poisson arrivals at it), shifted by ``offset``, in order."""
        out: list[float] = []
        for piece in self.pieces:
            rate = piece.draw(rng)
            if rate <= 0:
                continue
            t = piece.start + rng.expovariate(rate)
            while t < piece.end:
                out.append(offset + t)
                t += rng.expovariate(rate)
        return out


def fit_rate_profile(
    offsets: Sequence[float] | np.ndarray[Any, Any],
    observed: float,
    period: float = DAY,
    step: float = 3600.0,
    bin_seconds: float = BIN_SECONDS,
    p0: float = FALSE_ALARM,
) -> RateProfile:
    """The rate profile of arrivals at ``offsets`` (seconds since the recording's start),
    observed over ``[0, observed)``, folded on ``period``: each bin's count pooled over the
    periods that cover it, then Bayesian Blocks within each ``step`` of the period."""
    observed = max(observed, bin_seconds)
    length = min(period, observed)
    days = max(1, math.ceil(observed / period - 1e-9))
    bins = max(1, math.ceil(length / bin_seconds - 1e-9))
    edges = np.minimum(np.arange(bins + 1) * bin_seconds, length)
    times = np.asarray(offsets, dtype=float)
    times = times[(times >= 0) & (times < observed)]
    position = np.mod(times, period)
    counts = np.bincount(
        np.minimum((position / bin_seconds).astype(int), bins - 1), minlength=bins
    ).astype(float)
    exposure = np.zeros(bins)
    for day in range(days):
        covered = np.clip(observed - day * period - edges[:-1], 0.0, edges[1:] - edges[:-1])
        exposure += covered
    per_step = max(1, round(step / bin_seconds))
    pieces = []
    for low in range(0, bins, per_step):
        inside = np.arange(low, min(low + per_step, bins))
        kept = inside[exposure[inside] > 0]
        starts = bayesian_blocks(counts[kept], exposure[kept], p0)
        for index, first in enumerate(starts):
            last = starts[index + 1] if index + 1 < len(starts) else len(kept)
            chosen = kept[first:last]
            pieces.append(
                Piece(
                    float(edges[chosen[0]]),
                    float(edges[chosen[-1] + 1]),
                    float(counts[chosen].sum()),
                    float(exposure[chosen].sum()),
                )
            )
    return RateProfile(tuple(pieces), float(length), days)


@dataclass(frozen=True, slots=True)
class LogNormalFit:
    """A lognormal fitted to ``n`` values: its ``median`` and ``sigma``, the KS distance ``ks``
    between the sample and it, and that distance's parametric-bootstrap ``p_value``."""

    median: float
    sigma: float
    n: int
    ks: float
    p_value: float

    def quantile(self, q: float) -> float:
        from scipy import stats

        return float(self.median * math.exp(self.sigma * stats.norm.ppf(q)))


def _ks_lognormal(logs: np.ndarray) -> tuple[float, float, float]:
    """(mu, sigma, KS distance) of the normal fitted to ``logs`` (sorted)."""
    from scipy import special

    n = len(logs)
    mu, sigma = float(logs.mean()), float(logs.std())
    if sigma <= 0:
        return mu, 0.0, 0.0 if np.all(logs == mu) else 1.0
    cdf = 0.5 * special.erfc(-(logs - mu) / (sigma * math.sqrt(2.0)))
    above = np.arange(1, n + 1) / n - cdf
    below = cdf - np.arange(0, n) / n
    return mu, sigma, float(max(above.max(), below.max()))


def fit_lognormal(values: Sequence[float], seed: int = 0) -> LogNormalFit:
    """A lognormal fitted to the positive ``values`` by maximum likelihood, with the KS
    distance and its parametric-bootstrap p-value (``_BOOTSTRAP`` samples of the fitted law,
    each refitted, seeded by ``seed``: the same sample gives the same figure)."""
    sample = np.sort(np.asarray([v for v in values if v > 0 and math.isfinite(v)], dtype=float))
    if len(sample) < 2:
        raise ValueError("at least two positive values are needed to fit a lognormal")
    logs = np.log(sample)
    mu, sigma, distance = _ks_lognormal(logs)
    generator = np.random.default_rng(seed)
    exceed = 0
    for _ in range(_BOOTSTRAP):
        fake = np.sort(generator.normal(mu, sigma, len(logs)))
        exceed += _ks_lognormal(fake)[2] >= distance
    p_value = (exceed + 1) / (_BOOTSTRAP + 1)
    return LogNormalFit(math.exp(mu), sigma, len(sample), distance, p_value)
