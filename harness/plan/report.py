"""A plan's files: ``plan.csv``, ``confirmation.csv``, ``figures/*.png`` and ``report.md``.

Why a report beside the CSV: a plan is a claim (these sizes meet these objectives), and a
reader should see the evidence (each step's estimates with their intervals, n and method), the
confirmation with fresh seeds, and where the textbook answer (Erlang C per interval) would have
gone wrong or spent more, with the numbers that say why. The same plan gives the same bytes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.plan.baseline import READINGS, ErlangModel
from harness.plan.search import METHOD_LABELS, METHODS
from harness.plan.slo import Slo
from harness.runner.figures import check_figure, mark_events, save_figure, scenario_marks, time_axis
from harness.runner.metrics import METRICS, WINDOW_RULES, format_value
from harness.sweep.aggregate import CONFIDENCE

if TYPE_CHECKING:
    from harness.plan.planner import PlanResult, StepPlan

__all__ = ["FIGURES", "figures_of", "render_plan", "write_plan"]

#: File stem (without the metric of an objective's figure) → caption.
FIGURES: dict[str, str] = {
    "demand": "Demand per step",
    "workers": "The plan against the Erlang-C plan",
    "slo": "Each objective over the day, both plans confirmed",
}
#: A step's busiest sub-interval at this many times its mean rate counts as demand that moves
#: within the step.
_PEAKY = 1.5
#: ... when that sub-interval holds at least this many arrivals (a few arrivals peak by chance).
_FEW = 10


def _when(result: PlanResult, seconds: float) -> pd.Timestamp:
    return result.epoch() + pd.Timedelta(seconds=seconds)


def _day(moment: pd.Timestamp) -> float:
    """A position on a date axis (matplotlib's days since its epoch)."""
    return float(mdates.date2num(moment.to_pydatetime()))  # type: ignore[no-untyped-call]


def _x(result: PlanResult) -> list[float]:
    return [_day(_when(result, s.start)) for s in result.steps]


def _finish(figure: Figure, result: PlanResult, ylabel: str, title: str) -> Figure:
    ax = figure.axes[0]
    mark_events(ax, scenario_marks(result.scenario), result.epoch())
    time_axis(ax, "UTC")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    return figure


def demand_figure(result: PlanResult) -> Figure:
    """Arrivals per step and, at the same scale, the rate of each step's busiest sub-interval."""
    figure = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = figure.add_subplot()
    x = _x(result)
    width = result.step / 86_400 * 0.9
    arrivals = [s.demand.arrivals for s in result.steps]
    peaks = [s.demand.arrivals * s.demand.peak_ratio for s in result.steps]
    ax.bar(x, arrivals, width=width, align="edge", label="session arrivals in the step")
    ends = [*x, _day(_when(result, result.steps[-1].end))]
    ax.step(
        ends, [*peaks, peaks[-1]], where="post", color="tab:red",
        label="busiest sub-interval, at a step's rate",
    )  # fmt: skip
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    hours = result.step / 3600
    return _finish(figure, result, f"clients per {hours:g} h", "Demand per step (scenario's seed)")


def workers_figure(result: PlanResult) -> Figure:
    """The plan's workers per step against the Erlang-C plan's."""
    figure = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = figure.add_subplot()
    x = _x(result)
    ends = [*x, _day(_when(result, result.steps[-1].end))]
    plan = [s.workers for s in result.steps]
    erlang = [s.erlang_c for s in result.steps]
    ax.step(ends, [*plan, plan[-1]], where="post", label="plan (simulated, 95 % bound)")
    ax.step(ends, [*erlang, erlang[-1]], where="post", linestyle="--", label="Erlang C per step")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _finish(figure, result, "workers", "Workers per step: the plan against Erlang C")


def slo_figure(result: PlanResult, slo: Slo) -> Figure:
    """One objective's confirmed estimate per step, with its 95 % interval, for both plans,
    against its target."""
    assert result.confirmation is not None
    figure = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = figure.add_subplot()
    rows = result.confirmation[result.confirmation["metric"] == slo.metric]
    offset = result.step * 0.1 / 86_400
    for shift, (plan, label) in enumerate((("plan", "plan"), ("erlang_c", "Erlang-C plan"))):
        mine = rows[rows["plan"] == plan].sort_values("step")
        x = [
            _day(_when(result, float(s))) + offset * (2 + 3 * shift) for s in mine["start_seconds"]
        ]
        mean = mine["mean"]
        low, high = mine["ci_low"].fillna(mean), mine["ci_high"].fillna(mean)
        ax.errorbar(
            x, mean, yerr=[mean - low, high - mean], fmt="o", markersize=3, capsize=2,
            label=label,
        )  # fmt: skip
    ax.axhline(slo.target, color="black", linestyle=":", label=f"target {slo.op} {slo.target:g}")
    methods = sorted(set(rows["method"]))
    said = "; ".join(METHOD_LABELS[m] for m in methods)
    unit = f" ({METRICS[slo.metric].unit})" if METRICS[slo.metric].unit else ""
    title = (
        f"{slo.metric} per step, confirmed with fresh seeds\n"
        f"{CONFIDENCE:.0%} {said}, n = {result.replications} replications per step"
    )
    return _finish(figure, result, f"{slo.metric}{unit}", title)


def _stems(result: PlanResult) -> list[str]:
    stems = ["demand", "workers"]
    if result.confirmation is not None:
        stems += [f"slo_{slo.metric}" for slo in result.slos]
    return stems


def figures_of(result: PlanResult) -> dict[str, Figure]:
    """Every figure of the report by file stem."""
    figures = {"demand": demand_figure(result), "workers": workers_figure(result)}
    if result.confirmation is not None:
        for slo in result.slos:
            figures[f"slo_{slo.metric}"] = slo_figure(result, slo)
    for stem, figure in figures.items():
        problems = check_figure(figure)
        assert not problems, f"figure {stem}: {problems}"
    return figures


def _interval(metric: str, mean: float, low: float, high: float) -> str:
    values = (format_value(metric, v) for v in (mean, low, high))
    value, lo, hi = values
    return f"{value} [{lo}, {hi}]"


def _confirmed(result: PlanResult, plan: str) -> pd.DataFrame:
    assert result.confirmation is not None
    return result.confirmation[result.confirmation["plan"] == plan]


def _why(result: PlanResult, step: StepPlan, model: ErlangModel, missed: bool) -> list[str]:
    """What the numbers say about a step where the Erlang-C plan missed or spent more."""
    reasons = []
    demand = step.demand
    if missed and demand.peak_ratio >= _PEAKY and demand.peak_count >= _FEW:
        inside = [m for m in scenario_marks(result.scenario) if step.start <= m.at < step.end]
        named = f" ({', '.join(m.label for m in inside)})" if inside else ""
        reasons.append(
            f"demand moved within the step: its busiest sub-interval ran at "
            f"{demand.peak_ratio:.1f}x the step's mean rate{named}, and Erlang C sizes for the "
            "mean"
        )
    erlang = _confirmed(result, "erlang_c")
    here = erlang[erlang["step"] == step.index]
    busy = float(here["busy_at_start"].iloc[0]) if len(here) else math.nan
    if missed and not math.isnan(busy) and busy > demand.offered_load + 1:
        reasons.append(
            f"carry-over: the step began with {busy:.1f} workers still busy with earlier "
            f"sessions (mean over replications), against a stationary {demand.offered_load:.1f} "
            "Erlangs of its own load; Erlang C sees only the step's own arrivals"
        )
    if not missed:
        bound = "no bound" if model.queue_bound is None else f"at most {model.queue_bound}"
        reasons.append(
            "Erlang C keeps every session waiting until a worker frees (infinite patience); "
            f"here a session leaves at the start-up timeout ({model.startup_timeout:g} s) and "
            f"the queue holds {bound}, so the long waits it reads never form"
        )
    for slo in result.slos:
        if missed:  # Erlang C's own size: what it promised against what the confirmation saw
            size = step.erlang_c
            row = here[here["metric"] == slo.metric].iloc[0]
            source = "the confirmation measured"
        else:  # the plan's size: what Erlang C feared against what the search measured
            size = step.workers
            chosen = step.tried[step.workers].table
            row = chosen[chosen["metric"] == slo.metric].iloc[0]
            source = "the simulation measured"
        reading = model.reading(slo.metric, size, demand)
        measured = _interval(slo.metric, *(float(row[k]) for k in ("mean", "ci_low", "ci_high")))
        who = "its own" if missed else "the plan's"
        reasons.append(
            f"at {who} {size} workers Erlang C reads {slo.metric} = "
            f"{format_value(slo.metric, reading)}; {source} {measured}"
        )
    return reasons


def render_plan(result: PlanResult) -> str:
    """``report.md`` of ``result`` (figures by relative path)."""
    scenario = result.scenario
    model = ErlangModel.of(scenario)
    hours = result.step / 3600
    lines = [f"# avatar-sim plan: scenario `{scenario.name}`", ""]
    if scenario.description:
        lines += [scenario.description, ""]
    lines += ["## Objectives and method", ""]
    lines += [f"- `{slo.text}`: {METRICS[slo.metric].description}" for slo in result.slos]
    methods = "; ".join(f"`{k}`: {v}" for k, v in METHODS.items() if k != "wilson")
    populations = sorted({METRICS[slo.metric].population for slo in result.slos})
    rules = "; ".join(f"{p}: {WINDOW_RULES[p]}" for p in populations)
    lines += [
        "",
        f"Each step of {hours:g} h gets the fewest workers whose simulated metrics over the "
        f"step meet every objective at the unfavourable end of their {CONFIDENCE:.0%} "
        f"confidence interval, over n = {result.replications} replications (the same seeds "
        f"for every candidate of a step). Intervals: {methods}. Each step is simulated from "
        f"{result.warmup / 3600:g} h before it, with the earlier steps' sizes in the pool's "
        "schedule, so sessions carried over from them hold their workers; clients stop "
        f"arriving at the step's end and the run goes on {result.tail:g} s so that every "
        f"session created in the step has its outcome. Each metric counts by its population "
        f"({rules}). Every simulation keeps `records: summary`.",
        "",
        "The Erlang-C plan sizes each step alone, as a stationary M/M/c queue with the step's "
        "arrivals λ and mean holding time E[H] (start-up latency, session length and drain), "
        "offered load a = λ·E[H], the smallest c > a whose readings meet every objective "
        "(δ = c/E[H] - λ):",
        "",
        *(f"- `{slo.metric}`: {READINGS[slo.metric]}" for slo in result.slos),
    ]
    if result.warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in result.warnings)]
    table = result.table
    plan_hours = float(table["worker_hours"].sum())
    erlang_hours = float(table["erlang_c_worker_hours"].sum())
    lines += ["", "## The plan", ""]
    cost = ""
    if result.worker_cost is not None:
        cost = (
            f" Cost at {result.worker_cost:g} per worker-hour: "
            f"{plan_hours * result.worker_cost:,.2f}"
            f" (Erlang C: {erlang_hours * result.worker_cost:,.2f})."
        )
    lines += [
        f"{plan_hours:,.0f} worker-hours against Erlang C's {erlang_hours:,.0f}.{cost} "
        "Estimates from the search at the chosen size, with their 95 % intervals "
        "(`plan.csv` has them all):",
        "",
    ]
    header = ["start (UTC)", "arrivals", "load (Erl)", "Erlang C", "plan"]
    header += [slo.metric for slo in result.slos] + ["shown"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s, row in zip(result.steps, table.to_dict("records"), strict=True):
        cells = [f"{_when(result, s.start):%a %H:%M}", f"{s.demand.arrivals:,}"]
        cells += [f"{s.demand.offered_load:.1f}", str(s.erlang_c), str(s.workers)]
        for slo in result.slos:
            m = slo.metric
            cells.append(_interval(m, row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"]))
        cells.append("yes" if s.shown else "no")
        lines.append("| " + " | ".join(cells) + " |")
    if result.confirmation is not None:
        lines += _confirmation_lines(result, model)
    lines += ["", "## Figures", ""]
    for stem in _stems(result):
        caption = FIGURES.get(stem, f"{stem.removeprefix('slo_')} over the day, both plans")
        lines += [f"### {caption}", "", f"![{caption}](figures/{stem}.png)", ""]
    return "\n".join(lines).rstrip() + "\n"


def _met(rows: pd.DataFrame) -> tuple[int, int, int]:
    return int(rows["met"].sum()), int(rows["shown"].sum()), len(rows)


def _confirmation_lines(result: PlanResult, model: ErlangModel) -> list[str]:
    plan, erlang = _confirmed(result, "plan"), _confirmed(result, "erlang_c")
    met, shown, total = _met(plan)
    e_met, e_shown, _ = _met(erlang)
    certain, e_certain = int(plan["shown_missed"].sum()), int(erlang["shown_missed"].sum())
    lines = [
        "",
        "## Confirmation",
        "",
        f"Both schedules run from start to end with fresh seeds (the same for both), "
        f"n = {result.replications} replications, each step measured over its own window. "
        f"Met: the estimate meets the target; shown: so does the interval's unfavourable end. "
        f"Missed: the estimate misses it, shown when even the favourable end does. The plan "
        f"met {met} of {total} (step, objective) pairs, showed {shown} and missed {certain} "
        f"beyond doubt; the Erlang-C plan met {e_met}, showed {e_shown} and missed {e_certain} "
        "beyond doubt. A plan sized at 95 % confidence still misses a few pairs by chance when "
        "confirmed (each step's size is the smallest whose interval cleared the target, and "
        "the confirmation draws afresh): such a miss stays within its interval.",
        "",
    ]
    header = ["start (UTC)", "plan"]
    header += [f"{slo.metric} (plan)" for slo in result.slos] + ["Erlang C"]
    header += [f"{slo.metric} (Erlang C)" for slo in result.slos]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in result.steps:
        cells = [f"{_when(result, s.start):%a %H:%M}", str(s.workers)]
        for name, frame, size in (("plan", plan, s.workers), ("erlang_c", erlang, s.erlang_c)):
            if name == "erlang_c":
                cells.append(str(size))
            for slo in result.slos:
                row = frame[(frame["step"] == s.index) & (frame["metric"] == slo.metric)].iloc[0]
                said = _interval(slo.metric, row["mean"], row["ci_low"], row["ci_high"])
                verdict = (
                    "shown" if row["shown"] else "met" if row["met"]
                    else "**missed (shown)**" if row["shown_missed"] else "missed (by chance?)"
                )  # fmt: skip
                cells.append(f"{said} {verdict}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Where the Erlang-C plan misses the objectives or spends more, and why", ""]
    found = False
    for s in result.steps:
        here = erlang[erlang["step"] == s.index]
        missed = [str(m) for m in here.loc[~here["met"], "metric"]]
        if not missed and s.erlang_c <= s.workers:
            continue
        found = True
        what = []
        if missed:
            what.append(f"missed {', '.join(f'`{m}`' for m in missed)} with {s.erlang_c} workers")
        if s.erlang_c > s.workers:
            extra = (s.erlang_c - s.workers) * (s.end - s.start) / 3600
            what.append(f"spent {extra:g} worker-hours more than the plan ({s.erlang_c} against "
                        f"{s.workers})")  # fmt: skip
        lines.append(f"- **{_when(result, s.start):%a %H:%M}**: Erlang C {'; '.join(what)}.")
        lines += [f"  - {reason}" for reason in _why(result, s, model, bool(missed))]
    if not found:
        lines.append("Nowhere: the Erlang-C plan met every objective without spending more.")
    return lines


def write_plan(result: PlanResult, out: Path) -> list[Path]:
    """Write the plan's files under ``out``; returns them."""
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    table = result.table.copy()
    table["start"] = table["start"].map(lambda t: t.isoformat())
    written = [out / "plan.csv"]
    table.to_csv(written[0], index=False)
    if result.confirmation is not None:
        written.append(out / "confirmation.csv")
        result.confirmation.to_csv(written[-1], index=False)
    text = render_plan(result)
    for stem, figure in figures_of(result).items():
        written.append(save_figure(figure, figures_dir / f"{stem}.png"))
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return [report, *written]
