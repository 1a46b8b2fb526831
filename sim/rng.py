"""Seeded randomness, split into independent named streams.

One scenario seed feeds every stream; each stream's own seed is derived from the scenario seed
and the stream's name with SHA-256, so adding or drawing from one stream never shifts another.
No module in ``sim/`` touches the global ``random`` state.
"""

from __future__ import annotations

import hashlib
import math
import random

from sim.config import Constant, Distribution, Exponential, LogNormal, Uniform

__all__ = ["RandomStreams", "sample"]


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


def sample(dist: Distribution, rng: random.Random) -> float:
    """Draw one value of ``dist`` from ``rng``."""
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
