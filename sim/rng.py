"""Seeded randomness, split into independent named streams.

One scenario seed feeds every stream; each stream's own seed is derived from the scenario seed
and the stream's name with SHA-256, so adding or drawing from one stream never shifts another.
No module in ``sim/`` touches the global ``random`` state.

``sampler(dist, rng)`` binds a distribution to its stream once and returns a function that draws
a value, so a hot path pays for the dispatch on the distribution's kind once, not per draw.
``sample_length_biased`` draws the length of the interval that covers a fixed moment of a
stationary renewal process (long intervals are proportionally more likely to cover it), which is
what lets a talk-spurt pattern be observed at one moment without replaying its past;
``length_biased(dist)`` binds it to its distribution once.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable
from functools import partial
from itertools import repeat
from statistics import NormalDist

from sim.distributions import Constant, Distribution, Exponential, LogNormal, Uniform

__all__ = [
    "Draw",
    "RandomStreams",
    "Sampler",
    "length_biased",
    "sample",
    "sample_length_biased",
    "sampler",
]

#: Draws one value (a bound distribution and stream).
Sampler = Callable[[], float]
#: Draws one value from the stream it is given (a distribution bound once, not its stream).
Draw = Callable[[random.Random], float]

_NORMAL = NormalDist()


class RandomStreams:
    """A family of ``random.Random`` instances keyed by stream name (arrivals, ids, faults...)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._streams: dict[str, random.Random] = {}

    def stream(self, name: str) -> random.Random:
        rng = self._streams.get(name)
        if rng is None:
            digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
            rng = random.Random(int.from_bytes(digest[:16], "big"))
            self._streams[name] = rng
        return rng


def sampler(dist: Distribution, rng: random.Random) -> Sampler:
    """A function drawing values of ``dist`` from ``rng`` (the same values as ``sample``): where
    one exists, a callable of the standard library's (``repeat``, ``partial``), not a frame of
    our own."""
    match dist:
        case Constant():
            return repeat(dist.value).__next__
        case Exponential():
            return partial(rng.expovariate, 1.0 / dist.mean_value)
        case LogNormal():
            median, sigma, cap = dist.median, dist.sigma, dist.cap
            gauss, exp = rng.gauss, math.exp
            if cap is None:
                return lambda: median * exp(gauss(0.0, sigma))

            def capped() -> float:
                value = median * exp(gauss(0.0, sigma))
                return cap if cap < value else value  # ``min(value, cap)``, ties included

            return capped
        case Uniform():
            return partial(rng.uniform, dist.low, dist.high)
    raise TypeError(f"unknown distribution {dist!r}")  # pragma: no cover


def sample(dist: Distribution, rng: random.Random) -> float:
    """Draw one value of ``dist`` from ``rng`` (for one-off draws; bind a ``sampler`` in loops)."""
    match dist:
        case Constant():
            return dist.value
        case Exponential():
            return rng.expovariate(1.0 / dist.mean_value)
        case LogNormal():
            value = dist.median * math.exp(rng.gauss(0.0, dist.sigma))
            return min(value, dist.cap) if dist.cap is not None else value
        case Uniform():
            return rng.uniform(dist.low, dist.high)
    raise TypeError(f"unknown distribution {dist!r}")  # pragma: no cover


def sample_length_biased(dist: Distribution, rng: random.Random) -> float:
    """A value of ``dist`` drawn with probability proportional to its size (density x·f(x)/E[X]).

    In a stationary sequence of intervals drawn from ``dist``, this is the law of the interval
    that contains a given moment; the moment falls uniformly inside it. ``dist`` must have a
    positive mean. (A one-off ``length_biased(dist)(rng)``: bind ``length_biased`` in loops.)
    """
    return length_biased(dist)(rng)


def length_biased(dist: Distribution) -> Draw:
    """A function drawing ``sample_length_biased(dist, rng)`` from the stream it is given.

    Why bound: what depends only on ``dist`` (a rate, a capped lognormal's edge and its two
    normal CDFs) is computed once here rather than on every draw; the draws are the same
    values from the same calls to ``rng``.
    """
    match dist:
        case Constant():
            value = dist.value
            return lambda rng: value
        case Exponential():  # Gamma(2, mean): the sum of two exponentials
            rate = 1.0 / dist.mean_value
            return lambda rng: rng.expovariate(rate) + rng.expovariate(rate)
        case Uniform():  # density proportional to x on [low, high]
            low_squared = dist.low * dist.low
            spread = dist.high * dist.high - low_squared
            sqrt = math.sqrt
            return lambda rng: sqrt(low_squared + rng.random() * spread)
        case LogNormal():
            return _lognormal_length_biased(dist)
    raise TypeError(f"unknown distribution {dist!r}")  # pragma: no cover


def _lognormal_length_biased(dist: LogNormal) -> Draw:
    median, sigma, cap = dist.median, dist.sigma, dist.cap
    exp = math.exp
    if sigma == 0.0:
        value = median if cap is None else min(median, cap)
        return lambda rng: value
    # X·f(X)/E[X] for a lognormal (mu, sigma) is the lognormal (mu + sigma², sigma).
    if cap is None:
        return lambda rng: median * exp(sigma * sigma + sigma * rng.gauss(0.0, 1.0))
    # min(X, cap): a continuous part below the cap and an atom at the cap, weighted by size.
    edge = math.log(cap / median) / sigma
    below = median * math.exp(sigma * sigma / 2) * _NORMAL.cdf(edge - sigma)
    at_cap = cap * (1.0 - _NORMAL.cdf(edge))
    weight = below + at_cap
    below_edge = _NORMAL.cdf(edge - sigma)
    inv_cdf = _NORMAL.inv_cdf

    def draw(rng: random.Random) -> float:
        if rng.random() * weight >= below:
            return cap
        # The shifted lognormal conditioned below the cap, by inversion of its normal CDF.
        u = (1.0 - rng.random()) * below_edge
        return median * exp(sigma * sigma + sigma * inv_cdf(u))

    return draw
