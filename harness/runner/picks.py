"""A weighted choice bound once: the draw of ``Random.choices`` without its per-call work.

Every arrival picks an organization, a quality and a surface. ``WeightedPick`` is a fast path
beside its reference, ``Random.choices`` (``by_choices``; ``make bench`` prints what it saves a
month): the draw is one ``random()`` scaled by the total weight and bisected into the cumulative
weights, which is what CPython's ``Random.choices`` does, so every draw is the same.
"""

from __future__ import annotations

import math
import random
from bisect import bisect
from collections.abc import Sequence
from itertools import accumulate
from typing import Generic, TypeVar

__all__ = ["WeightedPick"]

T = TypeVar("T")


class WeightedPick(Generic[T]):
    """Draws one of ``values`` with probability proportional to ``weights`` from ``rng``."""

    __slots__ = ("_cumulative", "_hi", "_random", "_rng", "_total", "_values")

    def __init__(self, values: Sequence[T], weights: Sequence[float], rng: random.Random) -> None:
        if len(values) != len(weights) or not values:
            raise ValueError("one weight per value, and at least one value")
        self._values = list(values)
        self._cumulative = list(accumulate(weights))
        self._total = self._cumulative[-1] + 0.0
        if not (self._total > 0.0 and math.isfinite(self._total)):
            raise ValueError("the weights must have a positive, finite total")
        self._hi = len(values) - 1
        self._random = rng.random
        self._rng = rng

    def __call__(self) -> T:
        return self._values[bisect(self._cumulative, self._random() * self._total, 0, self._hi)]

    def by_choices(self) -> T:
        """``__call__``'s reference: the same draw through ``Random.choices``."""
        return self._rng.choices(self._values, cum_weights=self._cumulative)[0]
