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
from collections.abc import Callable, Mapping

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


def _caps(scenario: Scenario, refused: str, rate: float) -> str:
    per_key = scenario.sim_config().limits.concurrent_sessions_per_key
    ceiling = concurrency_ceiling(scenario)
    said = (
        f"Concurrency caps refused {refused} ({rate:.1%}, `concurrent_sessions`): the "
        "caps, not the pool, held that load back, and more workers will not let it through."
    )
    if ceiling is not None:
        said += (
            f" The organizations' caps allow at most {ceiling:,} sessions at once "
            f"({per_key} per key, each organization's "
            f"cap or keys) against up to {largest_pool(scenario):,} workers."
        )
    return said + (
        " Give the organizations more keys or `concurrency`, or set `limits.concurrency: off`."
    )


def _rate_limit(scenario: Scenario, refused: str, rate: float) -> str:
    limit = scenario.sim_config().limits.rate
    return (
        f"The create rate limit ({limit.session_creates_per_window} per key per "
        f"{limit.window_seconds:g} s) refused {refused} ({rate:.1%}, `rate_limited`) "
        "before they reached the pool. Spread the traffic over more keys, or set "
        "`limits.rate: off`."
    )


def _credits(scenario: Scenario, refused: str, rate: float) -> str:
    return (
        f"Organizations ran out of credits: {refused} ({rate:.1%}) were refused "
        "`insufficient_credits` and never reached the pool. Grant more credits "
        "(`config.billing`) or choose plans that include more."
    )


def _other(scenario: Scenario, refused: str, rate: float) -> str:
    return (
        f"{refused} ({rate:.1%}) were refused for reasons that are neither the pool, the "
        "caps, the rate limit nor credits (see the refused requests by code)."
    )


#: What to say about each cause of refusal (``refused_<cause>`` of the metrics), in order: told
#: the scenario, how many session clients it refused of how many, and their share.
_WARNINGS: dict[str, Callable[[Scenario, str, float], str]] = {
    "caps": _caps,
    "rate_limit": _rate_limit,
    "credits": _credits,
    "other": _other,
}


def binding_limits(scenario: Scenario, metrics: Mapping[str, float]) -> list[str]:
    """One warning per limit that refused session clients before they reached the pool (the
    counts ``refused_caps``, ``refused_rate_limit``, ``refused_credits``, ``refused_other``
    of ``metrics``, summed over whatever runs they describe)."""
    clients = metrics.get("session_clients", math.nan)
    warnings = []
    for cause, warning in _WARNINGS.items():
        count = metrics.get(f"refused_{cause}", math.nan)
        if count > 0:
            refused = f"{count:,.0f} of {clients:,.0f} session clients"
            warnings.append(warning(scenario, refused, count / clients if clients else math.nan))
    return warnings
