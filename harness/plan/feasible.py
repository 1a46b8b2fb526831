"""Objectives no pool can meet, refused before a plan searches (exit 2, PLAN-12).

Why before: a search for an impossible objective runs to its ceiling and comes back with a
ridiculous pool (``no_capacity_rate<=0`` once got hundreds of workers a step and exit 0). Two
kinds are impossible whatever the pool:

- **a rate of 0** (any proportion ``<= 0``): a plan shows an objective met when its interval's
  unfavourable end meets it, and the Wilson interval's upper end of a proportion stays above 0
  after any finite number of sessions, however many workers there are;
- **a wait below the start-up time**: the first frame comes the worker's boot and the first
  frame's latency after a worker takes the session, which no pool shortens, so a first-frame
  wait objective below their mean (for a mean), or below their 95th percentile (for the 95th
  percentile), cannot be met. The start-up latency's quantile is read from ``n = 200,000``
  draws of the configured distributions (seeded: the same every time), its error far below a
  bin's width (a target between it and the bin's upper edge is left to the search, which finds
  it unmet).
"""

from __future__ import annotations

import numpy as np

from harness.plan.slo import Slo
from harness.runner.metrics import METRICS
from harness.scenarios.model import Scenario
from sim.distributions import Constant, Distribution, Exponential, LogNormal, Uniform

__all__ = ["impossible", "startup_quantile"]

_DRAWS = 200_000


def _draws(distribution: Distribution, generator: np.random.Generator) -> np.ndarray:
    if isinstance(distribution, Constant):
        return np.full(_DRAWS, distribution.value)
    if isinstance(distribution, Exponential):
        return generator.exponential(distribution.mean_value, _DRAWS)
    if isinstance(distribution, LogNormal):
        values = distribution.median * np.exp(generator.normal(0.0, distribution.sigma, _DRAWS))
        return values if distribution.cap is None else np.minimum(values, distribution.cap)
    if isinstance(distribution, Uniform):
        return generator.uniform(distribution.low, distribution.high, _DRAWS)
    raise TypeError(f"unknown distribution {distribution!r}")  # pragma: no cover


def startup_quantile(scenario: Scenario, q: float) -> float:
    """The ``q``-quantile of the start-up latency (boot plus first frame) the scenario's
    service draws."""
    scheduler = scenario.sim_config().scheduler
    generator = np.random.default_rng(0)
    total = _draws(scheduler.worker_boot, generator) + _draws(
        scheduler.first_frame_latency, generator
    )
    return float(np.quantile(total, q))


def impossible(slos: tuple[Slo, ...], scenario: Scenario) -> list[str]:
    """One sentence per objective of ``slos`` no pool can meet in ``scenario``."""
    problems = []
    scheduler = scenario.sim_config().scheduler
    for slo in slos:
        spec = METRICS[slo.metric]
        if spec.kind == "proportion" and slo.op == "<=" and slo.target <= 0:
            problems.append(
                f"objective {slo.text!r}: no pool can show a rate of 0 (the upper end of its "
                "Wilson interval stays above 0 after any number of sessions); set a small "
                "positive target, such as 0.001"
            )
        elif slo.metric == "mean_first_frame_wait_seconds":
            floor = scheduler.worker_boot.mean + scheduler.first_frame_latency.mean
            if slo.target < floor:
                problems.append(
                    f"objective {slo.text!r}: the first frame comes the start-up latency after "
                    f"a worker takes the session, {floor:.2f} s on average (boot and first "
                    "frame), which no pool shortens; the target must be at least that"
                )
        elif slo.metric == "p95_first_frame_wait_seconds":
            latency = startup_quantile(scenario, 0.95)
            if slo.target < latency:
                problems.append(
                    f"objective {slo.text!r}: the 95th percentile of the start-up latency "
                    f"(boot and first frame, after a worker takes the session) is {latency:.2f} "
                    "s, which no pool shortens; the target must be at least that"
                )
    return problems
