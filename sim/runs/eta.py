"""Honest remaining-time estimates for runs (RES-RUN-2, GAP-RUN-9).

A run's duration is drawn from its model's configured distribution, so the platform knows that
distribution exactly. Given that a run has already spent ``elapsed`` seconds without finishing,
the remaining time ``D - elapsed`` follows the distribution of ``D`` conditioned on
``D > elapsed``; its quantiles are what ``eta.p50_seconds`` / ``eta.p95_seconds`` report. When the
conditional law is degenerate or unknown (e.g. the elapsed time is beyond every plausible
duration) no estimate is returned: the contract prefers no ``eta`` to a made-up one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from sim.distributions import Constant, Distribution, Exponential, LogNormal, Uniform

__all__ = ["ETA_SOURCE", "Eta", "remaining_quantile", "remaining_time"]

#: ``eta.source`` of every estimate computed here.
ETA_SOURCE = "model_distribution"

_STANDARD_NORMAL = NormalDist()


@dataclass(frozen=True, slots=True)
class Eta:
    p50_seconds: float
    p95_seconds: float
    source: str = ETA_SOURCE

    def to_resource(self) -> dict[str, object]:
        return {
            "p50_seconds": self.p50_seconds,
            "p95_seconds": self.p95_seconds,
            "source": self.source,
        }


def _lognormal_survival(dist: LogNormal, x: float) -> float:
    """P(X > x) of the uncapped log-normal."""
    if x <= 0:
        return 1.0
    z = (math.log(x) - math.log(dist.median)) / dist.sigma
    return 0.5 * math.erfc(z / math.sqrt(2.0))  # erfc keeps the far tail (cdf would round to 0)


def remaining_quantile(dist: Distribution, elapsed: float, q: float) -> float | None:
    """The ``q``-quantile of ``D - elapsed`` given ``D > elapsed``, or ``None`` if undefined."""
    if not 0.0 < q < 1.0:
        raise ValueError("q must lie strictly between 0 and 1")
    elapsed = max(0.0, elapsed)
    match dist:
        case Constant():
            return max(0.0, dist.value - elapsed)
        case Exponential():
            return -dist.mean_value * math.log1p(-q)  # memoryless
        case Uniform():
            low = max(dist.low, elapsed)
            if elapsed >= dist.high:
                return 0.0
            return low + q * (dist.high - low) - elapsed
        case LogNormal():
            if dist.sigma == 0:
                value = dist.median if dist.cap is None else min(dist.median, dist.cap)
                return max(0.0, value - elapsed)
            if dist.cap is not None and elapsed >= dist.cap:
                return 0.0
            # Work in the upper tail (survival = cdf(-z)) so a long-running run keeps an exact
            # figure instead of losing it to 1 - cdf(z) rounding to zero.
            tail = _lognormal_survival(dist, elapsed) * (1.0 - q)
            if tail <= 0.0:
                # Beyond the distribution's numerical range (the tail underflowed, possibly only
                # after scaling by 1 - q): no honest figure.
                return None
            z = -_STANDARD_NORMAL.inv_cdf(tail)
            x = dist.median * math.exp(dist.sigma * z)
            if dist.cap is not None:
                x = min(x, dist.cap)
            return max(0.0, x - elapsed)
    raise TypeError(f"unknown distribution {dist!r}")  # pragma: no cover


def remaining_time(dist: Distribution, elapsed: float) -> Eta | None:
    """p50/p95 of the remaining time, rounded to milliseconds, or ``None``."""
    p50 = remaining_quantile(dist, elapsed, 0.5)
    p95 = remaining_quantile(dist, elapsed, 0.95)
    if p50 is None or p95 is None:
        return None
    return Eta(p50_seconds=round(p50, 3), p95_seconds=round(max(p95, p50), 3))
