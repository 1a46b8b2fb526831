"""Queueing theory the capacity notebook and the theory tests check the simulator against.

Why here and not in the notebook: the formulas are easy to get subtly wrong (overflow of
``a**c / c!`` for large pools, cancellation near saturation), so they live in one tested place.

Assumptions, stated once: Poisson arrivals of rate λ; ``c`` identical servers; offered load
``a = λ · E[S]`` in Erlangs; FIFO service.

- **Erlang B** (M/G/c/c): blocked customers leave. Holds for *any* holding-time distribution with
  that mean. Computed by the stable recursion ``B(0) = 1, B(k) = a·B(k-1) / (k + a·B(k-1))``.
- **Erlang C** (M/M/c): customers wait with infinite patience; needs exponential holding times
  and ``a < c``.
- **M/M/c+G** (customers abandon once they have waited longer than their patience). With
  ``E = 1 / B(c-1, a)`` and ``J = ∫₀^∞ exp(λ·H(x) - cμx) dx``, ``H(x) = ∫₀^x P(patience > u) du``:

      P(wait > 0) = λJ / (E + λJ)
      P(abandon)  = (1 + (λ - cμ)·J) / (E + λJ)

  (A. Zeltyn and A. Mandelbaum, "Call centers with impatient customers: many-server asymptotics
  of the M/M/n+G queue", Queueing Systems 51 (2005) 361-402, section 2; the same formulas follow
  from the level-crossing equation of the virtual waiting time, O. J. Boxma and P. R. de Waal,
  "Multiserver queues with impatient customers", ITC 14, 1994.)

  * **M/M/c+D**: every customer has the same patience τ, as a session has the same start-up
    timeout. Then ``J = (1 - e^{-δτ})/δ + e^{-δτ}/(cμ)`` with ``δ = cμ - λ``, and the virtual
    waiting time has density ``∝ λ e^{-δv}`` below τ: a customer arriving when it is below τ is
    served after waiting it, the others abandon at τ. This is exactly the simulator's queue
    policy with ``startup_timeout_seconds = τ`` and no queue bound.
  * **Erlang A** (M/M/c+M): exponential patience of mean 1/θ. Then
    ``J = e^{λ/θ} (λ/θ)^{-cμ/θ} gamma(cμ/θ, λ/θ) / θ`` (the lower incomplete gamma function),
    and the mean wait is ``P(abandon)/θ`` (Little's law on the abandonment flow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import integrate, special

__all__ = [
    "Impatience",
    "erlang_a",
    "erlang_b",
    "erlang_c",
    "mean_wait_mmc",
    "mmc_deterministic_patience",
    "mmc_deterministic_patience_wait_quantile",
    "offered_load",
]


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


@dataclass(frozen=True, slots=True)
class Impatience:
    """The steady state of an M/M/c+G queue as seen by an arriving customer."""

    p_wait: float  # P(all servers busy on arrival): the customer waits, or abandons
    p_abandon: float  # P(the customer leaves before a server takes it)
    mean_wait: float  # mean time in queue over all customers (abandoners: until they leave)
    mean_wait_served: float | None  # of the customers who were served (M/M/c+D only)


def _check(servers: int, rate: float, mean_service: float) -> None:
    if servers < 1:
        raise ValueError("at least one server is needed")
    if rate < 0 or mean_service <= 0:
        raise ValueError("the arrival rate must be >= 0 and the mean service time > 0")


def mmc_deterministic_patience(
    servers: int, rate: float, mean_service: float, patience: float
) -> Impatience:
    """M/M/c+D: ``rate`` arrivals per second, exponential service of mean ``mean_service``
    seconds, and every customer abandons after waiting ``patience`` seconds."""
    _check(servers, rate, mean_service)
    if patience < 0:
        raise ValueError("patience must be >= 0")
    mu = 1.0 / mean_service
    capacity = servers * mu  # cμ
    delta = capacity - rate
    tau = patience
    if rate == 0:
        return Impatience(0.0, 0.0, 0.0, 0.0)
    e = 1.0 / erlang_b(servers - 1, rate * mean_service)
    # Everything below is in units of the density at 0+ (λ·p_{c-1}), scaled by ``s`` so that
    # no exponential overflows: s = 1 when delta >= 0, else e^{delta·tau} (<= 1).
    s = 1.0 if delta >= 0 else math.exp(delta * tau)
    tail = math.exp(-delta * tau) if delta >= 0 else 1.0  # e^{-δτ}·s, <= 1 in both cases

    def integral(power: int) -> float:
        """∫₀^τ v^power e^{-δv} dv · s, for power 0 and 1."""
        if abs(delta * tau) < 1e-9:
            return (tau ** (power + 1) / (power + 1)) * s
        if power == 0:
            return (s - tail) / delta
        return (s - tail * (1 + delta * tau)) / delta**2

    below = rate * integral(0)  # ∝ P(0 < V < τ)
    beyond = rate * tail / capacity  # ∝ P(V >= τ): these customers abandon
    norm = e * s + below + beyond
    waited = rate * integral(1)  # ∝ ∫₀^τ v f(v) dv
    return Impatience(
        p_wait=(below + beyond) / norm,
        p_abandon=beyond / norm,
        mean_wait=(waited + tau * beyond) / norm,
        mean_wait_served=waited / (e * s + below) if e * s + below > 0 else 0.0,
    )


def erlang_a(servers: int, rate: float, mean_service: float, mean_patience: float) -> Impatience:
    """Erlang A (M/M/c+M): exponential patience of mean ``mean_patience`` seconds."""
    _check(servers, rate, mean_service)
    if mean_patience <= 0:
        raise ValueError("the mean patience must be > 0")
    mu, theta = 1.0 / mean_service, 1.0 / mean_patience
    capacity = servers * mu
    if rate == 0:
        return Impatience(0.0, 0.0, 0.0, None)
    e = 1.0 / erlang_b(servers - 1, rate * mean_service)
    shape, x = capacity / theta, rate / theta
    regularized = float(special.gammainc(shape, x))
    if regularized > 0:
        log_j = (
            -math.log(theta)
            + x
            - shape * math.log(x)
            + float(special.gammaln(shape))
            + math.log(regularized)
        )
        j = math.exp(log_j)
    else:  # the incomplete gamma underflows for very patient customers: integrate J directly
        j = float(
            integrate.quad(
                lambda t: math.exp(rate * -math.expm1(-theta * t) / theta - capacity * t),
                0,
                math.inf,
                limit=200,
            )[0]
        )
    lam_j = rate * j
    p_abandon = (1.0 + (rate - capacity) * j) / (e + lam_j)
    p_abandon = min(max(p_abandon, 0.0), 1.0)
    return Impatience(lam_j / (e + lam_j), p_abandon, p_abandon / theta, None)


def mmc_deterministic_patience_wait_quantile(
    servers: int, rate: float, mean_service: float, patience: float, q: float
) -> float:
    """The ``q``-quantile of the wait of the customers an M/M/c+D queue serves (those who waited
    less than ``patience``): from the virtual waiting time's atom at 0 and its density
    ``∝ λ e^{-δv}`` below τ (see ``mmc_deterministic_patience``), by bisection."""
    _check(servers, rate, mean_service)
    if rate == 0 or not 0 < q < 1:
        return 0.0
    capacity = servers / mean_service
    delta = capacity - rate
    tau = patience
    atom = (1.0 if delta >= 0 else math.exp(delta * tau)) / erlang_b(
        servers - 1, rate * mean_service
    )
    log_s = 0.0 if delta >= 0 else delta * tau

    def waited(t: float) -> float:
        """λ ∫₀^t e^{-δv} dv, scaled as the atom is."""
        if abs(delta * tau) < 1e-9:
            return rate * t * math.exp(log_s)
        return rate * (math.exp(log_s) - math.exp(log_s - delta * t)) / delta

    served = atom + waited(tau)
    if atom / served >= q:
        return 0.0
    low, high = 0.0, tau
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (middle, high) if (atom + waited(middle)) / served < q else (low, middle)
    return high
