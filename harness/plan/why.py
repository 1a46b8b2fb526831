"""Where the Erlang-C plan misses the objectives or spends more than the plan, and why: the
report's section, each reason given only where the numbers show it beyond noise (PLAN-8).

- **A miss** is explained only when it is shown (the favourable end of the confirmation's
  interval misses the target too); a miss within the interval is said to be one, not explained.
- **Demand that moves within the step**: the busiest sub-interval's expected rate at least
  ``PEAKY`` times the step's mean, with at least ``FEW`` arrivals expected in it, from the rates
  (a declared burst, a fitted block of a recording: both beyond noise by construction) or, for
  a day replayed exactly, passing a scan test (``StepDemand.peak_shown``).
- **Carry-over**: the workers busy when the step began, over the replications, above the step's
  own stationary load by more than one worker and two standard errors (the busy servers of a
  stationary M/M/∞ queue are Poisson with mean ``a``: a standard error ``sqrt(a/n)``).
- **Patience**: where Erlang C spends more, M/M/c+D (the same queue with every session leaving
  at the start-up timeout) is given beside it; when it asks for fewer workers than Erlang C, the
  infinite patience Erlang C assumes is what cost the difference.
- **Spending more** is said only where the plan's own size was shown to meet the objectives.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from harness.plan.baseline import ErlangModel
from harness.runner.figures import scenario_marks
from harness.runner.metrics import format_value

if TYPE_CHECKING:
    from harness.plan.planner import PlanResult, StepPlan

__all__ = ["FEW", "PEAKY", "comparison_lines", "interval_text"]

#: A step's busiest sub-interval at this many times its mean rate counts as demand that moves.
PEAKY = 1.5
#: ... when that sub-interval expects at least this many arrivals (a few arrivals peak anyway).
FEW = 10


def interval_text(metric: str, mean: float, low: float, high: float) -> str:
    value, lo, hi = (format_value(metric, v) for v in (mean, low, high))
    return f"{value} [{lo}, {hi}]"


def _confirmed(result: PlanResult, plan: str) -> pd.DataFrame:
    assert result.confirmation is not None
    return result.confirmation[result.confirmation["plan"] == plan]


def _reasons(result: PlanResult, step: StepPlan, model: ErlangModel, missed: bool) -> list[str]:
    """What the numbers show about a step where the Erlang-C plan missed (beyond doubt) or
    spent more (than a size shown to suffice)."""
    reasons = []
    demand = step.demand
    peaky = demand.peak_ratio >= PEAKY and demand.peak_count >= FEW and demand.peak_shown
    if missed and peaky:
        inside = [m for m in scenario_marks(result.scenario) if step.start <= m.at < step.end]
        named = f" ({', '.join(m.label for m in inside)})" if inside else ""
        reasons.append(
            f"demand moved within the step: its busiest sub-interval ran at "
            f"{demand.peak_ratio:.1f}x the step's mean rate{named}, and Erlang C sizes for the "
            "mean"
        )
    here = _confirmed(result, "erlang_c")
    here = here[here["step"] == step.index]
    busy = float(here["busy_at_start"].iloc[0]) if len(here) else math.nan
    load = demand.offered_load
    noise = 2 * math.sqrt(max(load, 1.0) / result.replications)
    if missed and not math.isnan(busy) and busy > load + max(1.0, noise):
        reasons.append(
            f"carry-over: the step began with {busy:.1f} workers still busy with earlier "
            f"sessions (mean of n = {result.replications} replications), beyond a stationary "
            f"{load:.1f} Erlangs of its own load by more than noise ({noise:.1f}); Erlang C sees "
            "only the step's own arrivals"
        )
    if not missed and step.erlang_a < step.erlang_c:
        reasons.append(
            f"patience: Erlang C keeps every session waiting until a worker frees; here a "
            f"session leaves at the start-up timeout ({model.startup_timeout:g} s), and M/M/c+D, "
            f"the same queue with that patience, asks for {step.erlang_a} workers"
        )
    for slo in result.slos:
        if missed:  # Erlang C's own size: what it promised against what the confirmation saw
            size, reading = step.erlang_c, model.reading(slo.metric, step.erlang_c, demand)
            row = here[here["metric"] == slo.metric].iloc[0]
            source = "the confirmation measured"
        else:  # the plan's size: what Erlang C feared against what the search measured
            size, reading = step.workers, model.reading(slo.metric, step.workers, demand)
            chosen = step.tried[step.workers].table
            row = chosen[chosen["metric"] == slo.metric].iloc[0]
            source = "the simulation measured"
        measured = interval_text(
            slo.metric, *(float(row[k]) for k in ("mean", "ci_low", "ci_high"))
        )
        who = "its own" if missed else "the plan's"
        reasons.append(
            f"at {who} {size} workers Erlang C reads {slo.metric} = "
            f"{format_value(slo.metric, reading)}; {source} {measured}"
        )
    return reasons


def comparison_lines(result: PlanResult, model: ErlangModel) -> list[str]:
    """The report's section comparing the plan with the Erlang-C plan, step by step."""
    erlang = _confirmed(result, "erlang_c")
    lines = ["", "## Where the Erlang-C plan misses the objectives or spends more, and why", ""]
    found = False
    for s in result.steps:
        here = erlang[erlang["step"] == s.index]
        beyond = [str(m) for m in here.loc[here["shown_missed"].astype(bool), "metric"]]
        chance = [str(m) for m in here.loc[~here["met"] & ~here["shown_missed"], "metric"]]
        spends = s.erlang_c > s.workers and s.shown
        if not beyond and not chance and not spends:
            continue
        found = True
        what = []
        if beyond:
            what.append(f"missed {', '.join(f'`{m}`' for m in beyond)} with {s.erlang_c} workers")
        if chance:
            what.append(
                f"missed {', '.join(f'`{m}`' for m in chance)} within its interval (not shown "
                "beyond noise: no reason is given)"
            )
        if spends:
            extra = (s.erlang_c - s.workers) * (s.end - s.start) / 3600
            what.append(f"spent {extra:g} worker-hours more than the plan ({s.erlang_c} against "
                        f"{s.workers}, a size shown to suffice)")  # fmt: skip
        when = result.epoch() + pd.Timedelta(seconds=s.start)
        lines.append(f"- **{when:%a %H:%M}**: Erlang C {'; '.join(what)}.")
        if beyond:
            lines += [f"  - {reason}" for reason in _reasons(result, s, model, True)]
        if spends:
            lines += [f"  - {reason}" for reason in _reasons(result, s, model, False)]
    if not found:
        lines.append("Nowhere: the Erlang-C plan met every objective without spending more.")
    return lines
