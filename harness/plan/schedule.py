"""A plan's schedule: the pool each step needs, when to ask for it, and the scenario that plays it.

**When to ask** (PLAN-10). A worker asked for joins the pool ``provision_lead_seconds`` later
(``sim.sessions.scheduler``); a pool asked to shrink lets idle workers go at once. So to serve
``n_k`` workers from a step's start, the pool must be asked for them a lead time before it, and
must not be let go below them in between: the pool to ask for at an instant ``u`` is the most any
step needs over ``[u, u + lead]`` (``asks``). With no lead time that is each step's own size
from its start. What the pool then holds at ``t`` is the least asked for over ``[t - lead, t]``
(``held``): never less than the step needs, more where a dip between two busier steps is shorter
than the lead time (workers let go there would not be back in time). An ask before the run's
start is the pool the run starts with (``config.scheduler.workers``): it is already there.

**What plays it** (PLAN-11). The schedule is a scenario overlay (``harness.scenarios.overlay``):
``pool_schedule`` (the asks), the starting pool, and the lead time, laid over the scenario the
plan sized, with the demand the plan drew (a recording's fresh days); ``avatar-sim run`` and
``avatar-sim serve --scenario`` play it, and a plan's confirmation is that overlay run with
fresh seeds.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from harness.scenarios.model import Scenario
from harness.scenarios.parts import PoolChange

__all__ = ["asks", "held", "pool_seconds", "scheduled"]


def asks(steps: Sequence[tuple[float, float, int]], lead: float) -> list[tuple[float, int]]:
    """The pool to ask for, as (instant, workers) from each instant on, for ``steps`` (start,
    end, workers needed) and a provisioning ``lead`` time; instants before 0 are folded into 0
    (the starting pool). Consecutive equal sizes are merged."""
    if not steps:
        return []
    instants = sorted(
        {max(0.0, start - lead) for start, _e, _w in steps} | {s for s, _e, _w in steps}
    )
    found: list[tuple[float, int]] = []
    for instant in instants:
        window_end = instant + lead
        size = max(
            (workers for start, end, workers in steps if start <= window_end and end > instant),
            default=0,
        )
        if not found or found[-1][1] != size:
            found.append((instant, size))
    return found


def _asked_at(plan: Sequence[tuple[float, int]], moment: float) -> int:
    """The pool asked for at ``moment`` (before the first ask: the first, the starting pool)."""
    index = bisect.bisect_right([at for at, _ in plan], moment) - 1
    return plan[max(index, 0)][1]


def held(plan: Sequence[tuple[float, int]], lead: float, moment: float) -> int:
    """The pool held at ``moment`` under the asks ``plan``: the least asked for over
    ``[moment - lead, moment]`` (asks before the start count as the starting pool)."""
    low = moment - lead
    sizes = [_asked_at(plan, low)]
    sizes += [workers for at, workers in plan if low < at <= moment]
    return min(sizes)


def pool_seconds(plan: Sequence[tuple[float, int]], lead: float, start: float, end: float) -> float:
    """Worker-seconds the pool holds over ``[start, end)`` (``held`` integrated exactly: it
    changes only at an ask, or a lead time after one)."""
    edges = {start, end}
    for at, _workers in plan:
        for moment in (at, at + lead):
            if start < moment < end:
                edges.add(moment)
    ordered = sorted(edges)
    return sum(held(plan, lead, low) * (high - low) for low, high in itertools.pairwise(ordered))


def scheduled(scenario: Scenario, plan: Sequence[tuple[float, int]], lead: float) -> Scenario:
    """``scenario`` playing the asks ``plan`` with the provisioning ``lead`` time: the first ask
    is the starting pool, every ask a ``pool_schedule`` change."""
    if not plan:
        return scenario
    config = dict(scenario.config)
    scheduler = dict(config.get("scheduler", {}))
    scheduler.update(workers=plan[0][1], provision_lead_seconds=lead)
    config["scheduler"] = scheduler
    changes = tuple(PoolChange(at=at, workers=workers) for at, workers in plan)
    return scenario.model_copy(update={"pool_schedule": changes, "config": config})
