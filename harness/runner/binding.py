"""Saying out loud when a limit other than the pool holds the offered load back.

Why: a capacity study varies the pool and reads waits and refusals. When a concurrency cap, the
create rate limit or an organization's credits refuse clients before they ever reach the pool,
the study measures that limit instead, and adding workers changes nothing (a sweep over 10 to 30
workers once came out flat because per-key caps held concurrency at 10). ``binding_limits``
reads a run's refusals by cause (``harness.runner.metrics``) and the scenario's limits and
returns one sentence per limit that bound, with what to change; ``run``, ``sweep`` and ``plan``
print them and write them into their reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from harness.scenarios.model import Scenario

__all__ = ["binding_limits", "concurrency_ceiling", "largest_pool"]


def concurrency_ceiling(scenario: Scenario) -> int | None:
    """The most sessions the scenario's organizations can hold at once under the concurrency
    caps (each: its cap, or its keys times the per-key cap if fewer); ``None`` when the caps
    are switched off."""
    if scenario.limits.concurrency == "off":
        return None
    config = scenario.sim_config()
    per_key = config.limits.concurrent_sessions_per_key
    total = 0
    for org in scenario.organizations:
        cap = org.concurrency
        if cap is None:
            cap = config.billing.plan(org.plan).concurrent_sessions
        total += min(cap, org.keys * per_key)
    return total


def largest_pool(scenario: Scenario) -> int:
    """The most workers the scenario's pool is meant to have at any time (its configured size
    only if no planned size replaces it from the start)."""
    from_start = any(change.at <= 0 for change in scenario.pool_schedule)
    sizes = [] if from_start else [scenario.sim_config().scheduler.workers]
    sizes += [change.workers for change in scenario.pool_schedule]
    sizes += [fault.workers for fault in scenario.faults]
    return max(sizes)


def _share(metrics: Mapping[str, float], cause: str) -> tuple[float, float, float]:
    count = metrics.get(f"refused_{cause}", math.nan)
    clients = metrics.get("session_clients", math.nan)
    rate = count / clients if clients else math.nan
    return count, clients, rate


def binding_limits(scenario: Scenario, metrics: Mapping[str, float]) -> list[str]:
    """One warning per limit that refused session clients before they reached the pool (the
    counts ``refused_caps``, ``refused_rate_limit``, ``refused_credits``, ``refused_other``
    of ``metrics``, summed over whatever runs they describe)."""
    warnings = []
    config = scenario.sim_config()
    count, clients, rate = _share(metrics, "caps")
    if count > 0:
        ceiling = concurrency_ceiling(scenario)
        pool = largest_pool(scenario)
        said = (
            f"Concurrency caps refused {count:,.0f} of {clients:,.0f} session clients "
            f"({rate:.1%}, `concurrent_sessions`): the caps, not the pool, held that load back, "
            "and more workers will not let it through."
        )
        if ceiling is not None:
            said += (
                f" The organizations' caps allow at most {ceiling:,} sessions at once "
                f"({config.limits.concurrent_sessions_per_key} per key, each organization's "
                f"cap or keys) against up to {pool:,} workers."
            )
        said += (
            " Give the organizations more keys or `concurrency`, or set `limits.concurrency: off`."
        )
        warnings.append(said)
    count, clients, rate = _share(metrics, "rate_limit")
    if count > 0:
        limit = config.limits.rate.session_creates_per_window
        window = config.limits.rate.window_seconds
        warnings.append(
            f"The create rate limit ({limit} per key per {window:g} s) refused {count:,.0f} of "
            f"{clients:,.0f} session clients ({rate:.1%}, `rate_limited`) before they reached "
            "the pool. Spread the traffic over more keys, or set `limits.rate: off`."
        )
    count, clients, rate = _share(metrics, "credits")
    if count > 0:
        warnings.append(
            f"Organizations ran out of credits: {count:,.0f} of {clients:,.0f} session clients "
            f"({rate:.1%}) were refused `insufficient_credits` and never reached the pool. Grant "
            "more credits (`config.billing`) or choose plans that include more."
        )
    count, clients, rate = _share(metrics, "other")
    if count > 0:
        warnings.append(
            f"{count:,.0f} of {clients:,.0f} session clients ({rate:.1%}) were refused for "
            "reasons that are neither the pool, the caps, the rate limit nor credits (see the "
            "refused requests by code)."
        )
    return warnings
