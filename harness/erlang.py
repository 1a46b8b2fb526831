"""Erlang B and Erlang C: the textbook answers the capacity notebook checks the simulator against.

Why here and not in the notebook: the formulas are easy to get subtly wrong (overflow of
``a**c / c!`` for large pools), so they live in one tested place. Both use the numerically stable
recursion ``B(0) = 1, B(k) = a·B(k-1) / (k + a·B(k-1))``.

Assumptions, stated once: Poisson arrivals of rate λ; ``c`` identical servers; offered load
``a = λ · E[S]`` in Erlangs. Erlang B (M/G/c/c, blocked customers leave) holds for *any*
holding-time distribution with that mean. Erlang C (M/M/c, customers wait with infinite
patience) needs exponential holding times and ``a < c``.
"""

from __future__ import annotations

import math

__all__ = ["erlang_b", "erlang_c", "mean_wait_mmc", "offered_load"]


def offered_load(rate_per_hour: float, mean_holding_seconds: float) -> float:
    """Offered traffic in Erlangs: arrivals per second times mean holding time."""
    return rate_per_hour / 3600.0 * mean_holding_seconds


def erlang_b(servers: int, load: float) -> float:
    """Probability that an arrival finds all ``servers`` busy in a loss system (blocking)."""
    if servers < 0 or load < 0:
        raise ValueError("servers and load must be >= 0")
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = load * blocking / (k + load * blocking)
    return blocking


def erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival has to wait in an M/M/c queue (1.0 when unstable)."""
    if servers <= 0:
        return 1.0
    if load >= servers:
        return 1.0
    b = erlang_b(servers, load)
    return servers * b / (servers - load * (1.0 - b))


def mean_wait_mmc(servers: int, load: float, mean_holding_seconds: float) -> float:
    """Mean wait in queue of an M/M/c system, in seconds (``inf`` when unstable)."""
    if load >= servers:
        return math.inf
    return erlang_c(servers, load) * mean_holding_seconds / (servers - load)
