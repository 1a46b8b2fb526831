"""A plan's files: ``plan.csv``, ``search.csv``, ``confirmation.csv``, ``plan.yaml`` (the
overlay that plays it), ``figures/*.png`` and ``report.md``.

Why a report beside the CSV: a plan is a claim (these sizes meet these objectives), and a
reader should see the evidence (each step's estimates with their intervals, n and method), the
confirmation with fresh seeds, and where the textbook answer (Erlang C per interval) would have
gone wrong or spent more, with the numbers that say why; a reason is given only where the
numbers show it beyond noise (PLAN-8). The same plan gives the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.plan.adaptive import DECISIONS
from harness.plan.baseline import READINGS, ErlangModel
from harness.plan.search import METHOD_LABELS, METHODS
from harness.plan.slo import Slo
from harness.plan.why import comparison_lines, interval_text
from harness.runner.figures import check_figure, mark_events, save_figure, scenario_marks, time_axis
from harness.runner.metrics import METRICS, WINDOW_RULES
from harness.scenarios.overlay import relative_to, write_overlay
from harness.sweep.aggregate import CONFIDENCE

if TYPE_CHECKING:
    from harness.plan.planner import PlanResult

__all__ = ["FIGURES", "figures_of", "render_plan", "write_plan"]

#: File stem (without the metric of an objective's figure) → caption.
FIGURES: dict[str, str] = {
    "demand": "Demand per step",
    "workers": "The plan against the Erlang-C plan",
    "slo": "Each objective over the day, both plans confirmed",
}


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
    """Expected arrivals per step (the scenario's rates) and, at the same scale, the rate of
    each step's busiest sub-interval."""
    figure = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = figure.add_subplot()
    x = _x(result)
    width = result.step / 86_400 * 0.9
    arrivals = [s.demand.arrivals for s in result.steps]
    peaks = [s.demand.arrivals * s.demand.peak_ratio for s in result.steps]
    ax.bar(x, arrivals, width=width, align="edge", label="expected session arrivals in the step")
    ends = [*x, _day(_when(result, result.steps[-1].end))]
    ax.step(
        ends, [*peaks, peaks[-1]], where="post", color="tab:red",
        label="busiest sub-interval, at a step's rate",
    )  # fmt: skip
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    hours = result.step / 3600
    return _finish(
        figure, result, f"clients per {hours:g} h", "Demand per step (expected, from the rates)"
    )


def workers_figure(result: PlanResult) -> Figure:
    """The plan's workers per step against the Erlang-C plan's."""
    figure = Figure(figsize=(9.0, 3.6), layout="constrained")
    ax = figure.add_subplot()
    x = _x(result)
    ends = [*x, _day(_when(result, result.steps[-1].end))]
    plan = [s.workers for s in result.steps]
    erlang = [s.erlang_c for s in result.steps]
    patient = [s.erlang_a for s in result.steps]
    ax.step(ends, [*plan, plan[-1]], where="post", label="plan (simulated, 95 % bound)")
    ax.step(ends, [*erlang, erlang[-1]], where="post", linestyle="--", label="Erlang C per step")
    ax.step(ends, [*patient, patient[-1]], where="post", linestyle=":", label="M/M/c+D per step")
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


def render_plan(result: PlanResult) -> str:
    """``report.md`` of ``result`` (figures by relative path)."""
    scenario = result.scenario
    model = ErlangModel.of(scenario)
    hours = result.step / 3600
    lines = [f"# avatar-sim plan: scenario `{scenario.name}`", "", f"**{result.verdict}**", ""]
    if scenario.description:
        lines += [scenario.description, ""]
    lines += ["## Objectives and method", ""]
    lines += [f"- `{slo.text}`: {METRICS[slo.metric].description}" for slo in result.slos]
    methods = "; ".join(f"`{k}`: {v}" for k, v in METHODS.items() if k != "wilson")
    populations = sorted({METRICS[slo.metric].population for slo in result.slos})
    rules = "; ".join(f"{p}: {WINDOW_RULES[p]}" for p in populations)
    looks = result.looks
    counts = ", ".join(str(c) for c in looks.counts)
    lines += ["", "**What the 95 % covers.** " + (result.demand.covers if result.demand else "")]
    lines += [
        "",
        f"Each step of {hours:g} h (a last step that does not fit is shorter, weighted by its "
        "length) gets the fewest workers whose simulated metrics over the step meet every "
        "objective at the unfavourable end of their confidence interval; the size one fewer "
        "is judged too (`decision`: shown to miss, missing by its estimate, or undecided). A "
        f"step starts with n = {looks.first} replications (the same seeds for every candidate "
        "of a step); while one fewer meets by its estimate, is not shown to and its interval is "
        f"wider than one worker's effect, it gets twice the replications, up to {looks.cap} "
        f"(looks at {counts}). The 5 % error is "
        f"spent over the looks: the first at {looks.confidence_at(looks.first):.2%}, the later "
        f"at {looks.confidence_at(looks.cap):.2%} (a union bound, as Bonferroni), so a size is "
        "called met falsely with at most 5 % chance however many looks it took. "
        f"Intervals: {methods}. Each step is simulated from "
        f"{result.warmup / 3600:g} h before it, with the earlier steps' sizes in the pool's "
        "schedule, so sessions carried over from them hold their workers; clients stop "
        f"arriving at the step's end and the run goes on {result.tail:g} s so that every "
        f"session created in the step has its outcome. Each metric counts by its population "
        f"({rules}). Every simulation keeps `records: summary`.",
        "",
        (
            "The search sizes for what the limits let through (`--as-limited`)."
            if result.as_limited
            else "The search sizes for every client: the limits that refuse clients before the "
            "pool (concurrency caps, the create rate limit, credits) are lifted in it, so each "
            "objective counts the whole demand; where the scenario's own limits would refuse "
            "clients, the warnings say so at each step."
        ),
        "",
        f"Workers asked for join the pool {result.lead:g} s later (the provisioning lead time): "
        "`plan.csv` says when to ask for each step's workers (`ask_at`) and when they serve "
        "(`serve_from`); `plan.yaml` is the overlay that plays the plan (`avatar-sim run "
        "plan.yaml`, `avatar-sim serve --scenario plan.yaml`).",
        "",
        "The Erlang-C plan sizes each step alone, as a stationary M/M/c queue with the step's "
        "expected arrivals λ (from the scenario's rates, not one draw) and mean holding time "
        "E[H] (start-up latency, session length and drain), offered load a = λ·E[H], the "
        "smallest c > a whose readings meet every objective (δ = c/E[H] - λ); M/M/c+D, beside "
        "it, is the same queue with every session leaving at the start-up timeout:",
        "",
        *(f"- `{slo.metric}`: {READINGS[slo.metric]}" for slo in result.slos),
    ]
    if result.warnings:
        lines += ["", "## Warnings", "", *(f"- {w}" for w in result.warnings)]
    lines += _plan_lines(result)
    if result.confirmation is not None:
        lines += _confirmation_lines(result)
        lines += comparison_lines(result, model)
    lines += ["", "## Figures", ""]
    for stem in _stems(result):
        caption = FIGURES.get(stem, f"{stem.removeprefix('slo_')} over the day, both plans")
        lines += [f"### {caption}", "", f"![{caption}](figures/{stem}.png)", ""]
    return "\n".join(lines).rstrip() + "\n"


def _plan_lines(result: PlanResult) -> list[str]:
    table = result.table
    plan_hours = float(table["worker_hours"].sum())
    erlang_hours = float(table["erlang_c_worker_hours"].sum())
    cost = ""
    if result.worker_cost is not None:
        cost = (
            f" Cost at {result.worker_cost:g} per worker-hour: "
            f"{plan_hours * result.worker_cost:,.2f}"
            f" (Erlang C: {erlang_hours * result.worker_cost:,.2f})."
        )
    decided = "; ".join(f"{name}: {text}" for name, text in DECISIONS.items())
    lines = [
        "",
        "## The plan",
        "",
        f"{plan_hours:,.0f} worker-hours of the pool held against Erlang C's "
        f"{erlang_hours:,.0f}.{cost} Estimates from the search at the chosen size, with their "
        f"intervals and replications (`plan.csv` has them all, `search.csv` every size tried). "
        f"Decisions: {decided}.",
        "",
    ]
    header = ["start (UTC)", "ask at", "arrivals", "load (Erl)", "Erlang C", "M/M/c+D", "plan"]
    header += [slo.metric for slo in result.slos] + ["n", "decision"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s, row in zip(result.steps, table.to_dict("records"), strict=True):
        cells = [f"{_when(result, s.start):%a %H:%M}", f"{row['ask_at']:%a %H:%M}"]
        cells += [f"{s.demand.arrivals:,.1f}", f"{s.demand.offered_load:.1f}"]
        cells += [str(s.erlang_c), str(s.erlang_a), str(s.workers)]
        for slo in result.slos:
            m = slo.metric
            cells.append(interval_text(m, row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"]))
        cells += [str(row["replications"]), s.decision]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _met(rows: pd.DataFrame) -> tuple[int, int, int]:
    return int(rows["met"].sum()), int(rows["shown"].sum()), len(rows)


def _confirmation_lines(result: PlanResult) -> list[str]:
    assert result.confirmation is not None
    confirmed = result.confirmation
    plan, erlang = (confirmed[confirmed["plan"] == name] for name in ("plan", "erlang_c"))
    met, shown, total = _met(plan)
    e_met, e_shown, _ = _met(erlang)
    certain, e_certain = int(plan["shown_missed"].sum()), int(erlang["shown_missed"].sum())
    beyond = int(plan["missed_beyond_doubt"].sum())
    lines = [
        "",
        "## Confirmation",
        "",
        f"`plan.yaml` (the overlay: the scenario as configured, its limits included, the plan's "
        f"asks and lead time) and the same overlay with the Erlang-C schedule run from start "
        f"to end with fresh seeds (the same for both), n = {result.replications} replications, "
        f"each step measured over its own window. Met: the estimate meets the target; shown: "
        f"so does the interval's unfavourable end. Missed: the estimate misses it, shown when "
        f"even the favourable end does; beyond doubt when it does at 1 - 0.05/{total} (the "
        f"{total} (step, objective) pairs as one family, Bonferroni): what the command exits 1 "
        f"on. The plan met {met} of {total} pairs, showed {shown}, missed {certain} shown and "
        f"{beyond} beyond doubt; the Erlang-C plan met {e_met}, showed {e_shown} and missed "
        f"{e_certain} shown. A plan sized at 95 % confidence still misses a few pairs by chance "
        "when confirmed (each step's size is the smallest whose interval cleared the target, "
        "and the confirmation draws afresh): such a miss stays within its interval.",
    ]
    unthrottled = confirmed[confirmed["plan"] == "plan_unthrottled"]
    if len(unthrottled):
        u_met, u_shown, _ = _met(unthrottled)
        lines += [
            "",
            f"Limits refused clients before the pool, so the plan's schedule was also run with "
            f"them lifted (every client reaching the pool, as the plan sized it): it met "
            f"{u_met} of {total} pairs, showed {u_shown} and missed "
            f"{int(unthrottled['missed_beyond_doubt'].sum())} beyond doubt.",
        ]
    lines.append("")
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
                said = interval_text(slo.metric, row["mean"], row["ci_low"], row["ci_high"])
                verdict = (
                    "shown" if row["shown"] else "met" if row["met"]
                    else "**missed (shown)**" if row["shown_missed"] else "missed (by chance?)"
                )  # fmt: skip
                cells.append(f"{said} {verdict}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def overlay_header(result: PlanResult) -> str:
    """The comment a plan's overlay starts with: what it is and how it was found."""
    objectives = ", ".join(slo.text for slo in result.slos)
    return (
        f"avatar-sim plan of {result.scenario.name}: the pool per {result.step / 3600:g} h step "
        f"under {objectives}.\n"
        f"{result.verdict}\n"
        "Run it (avatar-sim run plan.yaml) or serve it (avatar-sim serve --scenario plan.yaml);\n"
        "pool_schedule holds the asks: each size is asked for at `at` and workers join\n"
        f"provision_lead_seconds ({result.lead:g} s) later; report.md says how it was found."
    )


def write_plan(result: PlanResult, out: Path) -> list[Path]:
    """Write the plan's files under ``out``; returns them."""
    figures_dir = out / "figures"
    figures_dir.mkdir(parents=True, exist_ok=True)
    table = result.table.copy()
    for column in ("start", "ask_at", "serve_from"):
        table[column] = table[column].map(lambda t: t.isoformat())
    written = [out / "plan.csv", out / "search.csv"]
    table.to_csv(written[0], index=False)
    result.search.to_csv(written[1], index=False)
    if result.confirmation is not None:
        written.append(out / "confirmation.csv")
        result.confirmation.to_csv(written[-1], index=False)
    written.append(_write_overlay(result, out / "plan.yaml"))
    text = render_plan(result)
    for stem, figure in figures_of(result).items():
        written.append(save_figure(figure, figures_dir / f"{stem}.png"))
    report = out / "report.md"
    report.write_text(text, encoding="utf-8")
    return [report, *written]


def _write_overlay(result: PlanResult, path: Path) -> Path:
    """``plan.yaml``: the plan's changes over the scenario's file (a whole scenario when the
    plan was given no file), each recording named relative to it."""
    changes = dict(result.overlay)
    if "arrivals" in changes:
        changes["arrivals"] = [
            {**a, "path": relative_to(a["path"], path.parent)} if a.get("kind") == "recorded" else a
            for a in changes["arrivals"]
        ]
    if result.source is not None:
        return write_overlay(path, changes, extends=result.source, header=overlay_header(result))
    assert result.deployed is not None
    whole = result.deployed.model_dump(mode="json")
    whole.update(changes)
    return write_overlay(path, whole, header=overlay_header(result))
