"""``plan_capacity``: the fewest workers per step that meet every objective, then a confirmation.

The search, step by step (``harness.plan.search`` says why each step is a window):

1. The step's Erlang-C size (``harness.plan.baseline``), moved by the median of how far the
   last three steps' sizes fell from theirs, is the first guess.
2. A candidate is simulated over ``replications`` seeds (the same seeds for every candidate of
   a step: common random numbers, so candidates differ by their size, not by luck), and meets
   the objectives when every objective's *unfavourable* bound of its 95 % interval does
   (``Slo.unfavourable``; proportions: the Wilson interval of the counts pooled over the
   replications, widened to the t interval of the replications' rates where wider
   (``harness.plan.search.intervals`` says why); other metrics: the Student t interval of the
   replications, clipped to the metric's range, as ``harness.sweep.aggregate``).
3. Candidates are tried two at a time (both cores busy): down from the guess while they meet the
   objectives, up while they do not, every result kept; the step's size is the smallest that
   meets them with one fewer failing. If a candidate fails although its pool never saturated
   (no session waited or failed, no create was refused for capacity), more workers cannot
   change a thing: the step is marked not shown (too few sessions for the interval to reach
   the target; more replications would) and the fewest workers that never saturate are kept.
4. The step's size is fixed in the schedule before the next step is searched.

The confirmation runs the whole schedule, and the Erlang-C schedule, from the start to the end
with fresh seeds (the same for both), measures every step's window and says per step and
objective whether the estimate met the target and whether its interval shows it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.plan.baseline import (
    ErlangModel,
    StepDemand,
    demand_per_step,
    erlang_c_workers,
)
from harness.plan.search import (
    COUNTS,
    Evidence,
    WindowTask,
    derived_seed,
    evidence,
    idle,
    intervals,
    judged,
    retry_span,
    run_window,
    with_schedule,
)
from harness.plan.slo import Slo, parse_slos
from harness.runner.binding import binding_limits
from harness.runner.engine import session_arrivals
from harness.scenarios.loader import load_scenario
from harness.scenarios.model import Scenario
from harness.sweep.execute import Runner, open_runner, progress_bar

__all__ = ["PlanError", "PlanResult", "StepPlan", "plan_capacity"]

#: The Erlang-C size of a step it cannot staff (none up to ``baseline``'s limit).
_LARGE = 100_000
#: A step's length unless told otherwise: an hour, the staffing interval of the classic plans.
DEFAULT_STEP = 3600.0
#: The plans a confirmation runs, in order.
PLANS: tuple[str, ...] = ("plan", "erlang_c")


class PlanError(ValueError):
    """A plan that cannot be made as asked (its step or warm-up off the scenario's grid)."""


@dataclass(frozen=True)
class StepPlan:
    """One step: its demand, the size chosen and the Erlang-C size, every candidate tried (size →
    ``Evidence``) and whether the chosen one was shown to meet the objectives."""

    index: int
    demand: StepDemand
    workers: int
    erlang_c: int
    tried: dict[int, Evidence]
    shown: bool

    @property
    def start(self) -> float:
        return self.demand.start

    @property
    def end(self) -> float:
        return self.demand.end


@dataclass(frozen=True)
class PlanResult:
    """What ``plan_capacity`` found. ``table`` is ``plan.csv``; ``confirmation`` one row per
    (plan, step, objective); ``write(out)`` writes the CSVs, the figures and ``report.md``."""

    scenario: Scenario
    slos: tuple[Slo, ...]
    step: float
    warmup: float
    tail: float
    replications: int
    worker_cost: float | None
    steps: tuple[StepPlan, ...]
    confirmation: pd.DataFrame | None
    warnings: tuple[str, ...] = field(default=())

    @property
    def schedule(self) -> list[tuple[float, int]]:
        """The plan as (start, workers), the scenario's ``pool_schedule``."""
        return [(s.start, s.workers) for s in self.steps]

    @property
    def erlang_c_schedule(self) -> list[tuple[float, int]]:
        return [(s.start, s.erlang_c) for s in self.steps]

    def epoch(self) -> pd.Timestamp:
        return pd.Timestamp(self.scenario.sim_config().epoch)

    @property
    def table(self) -> pd.DataFrame:
        """One row per step: ``start`` (UTC), ``start_seconds``, ``workers``, each objective's
        metric with its 95 % interval from the search at the chosen size, ``shown``,
        ``worker_hours`` and (with a worker cost) ``cost``; beside them the step's demand and
        the Erlang-C size."""
        epoch = self.epoch()
        rows = []
        for s in self.steps:
            hours = (s.end - s.start) / 3600
            row: dict[str, Any] = {
                "start": epoch + pd.Timedelta(seconds=s.start),
                "start_seconds": s.start,
                "workers": s.workers,
            }
            chosen = s.tried[s.workers].table
            for slo in self.slos:
                found = chosen[chosen["metric"] == slo.metric].iloc[0]
                row[slo.metric] = float(found["mean"])
                row[f"{slo.metric}_ci_low"] = float(found["ci_low"])
                row[f"{slo.metric}_ci_high"] = float(found["ci_high"])
            row["shown"] = s.shown
            row["worker_hours"] = s.workers * hours
            if self.worker_cost is not None:
                row["cost"] = s.workers * hours * self.worker_cost
            row["arrivals"] = s.demand.arrivals
            row["offered_load"] = s.demand.offered_load
            row["erlang_c_workers"] = s.erlang_c
            row["erlang_c_worker_hours"] = s.erlang_c * hours
            rows.append(row)
        return pd.DataFrame(rows)

    def scenario_with_plan(self) -> Scenario:
        """The scenario with this plan as its ``pool_schedule`` (what to run or deploy)."""
        return with_schedule(self.scenario, self.schedule).model_copy(
            update={"records": self.scenario.records}
        )

    def write(self, out: str | Path) -> list[Path]:
        """Write ``plan.csv``, ``confirmation.csv``, the figures and ``report.md`` into ``out``
        (``harness.plan.report``); returns the paths written."""
        from harness.plan.report import write_plan

        return write_plan(self, Path(out))


def _grid_problems(scenario: Scenario, step: float, warmup: float) -> list[str]:
    every = scenario.sample_every
    problems = []
    for name, value in (("step", step), ("warm-up", warmup)):
        if value < 0 or (name == "step" and value <= 0):
            problems.append(f"the {name} must be > 0" if name == "step" else "warm-up < 0")
        elif abs(value / every - round(value / every)) > 1e-9:
            problems.append(
                f"the {name} ({value:g} s) must be a whole number of the scenario's "
                f"sample_every ({every:g} s): metrics are exact on that grid"
            )
    return problems


class _Search:
    """One plan's search: the schedule fixed so far, and the runner that simulates."""

    def __init__(
        self,
        scenario: Scenario,
        slos: tuple[Slo, ...],
        runner: Runner,
        replications: int,
        warmup: float,
        tail: float,
        seed: int,
    ) -> None:
        self.scenario, self.slos, self.runner = scenario, slos, runner
        self.replications, self.warmup, self.tail, self.seed = replications, warmup, tail, seed
        self.schedule: list[tuple[float, int]] = []

    def _try(self, index: int, demand: StepDemand, sizes: Sequence[int]) -> dict[int, Evidence]:
        tasks = []
        for size in sizes:
            scenario = with_schedule(self.scenario, [*self.schedule, (demand.start, size)])
            for r in range(self.replications):
                tasks.append(
                    WindowTask(
                        point=size,
                        replication=r,
                        seed=derived_seed(self.seed, "search", index, r),
                        scenario=scenario,
                        arrivals_from=max(0.0, demand.start - self.warmup),
                        arrivals_until=demand.end,
                        end=demand.end + self.tail,
                        windows=((demand.start, demand.end),),
                    )
                )
        rows = self.runner.map(run_window, tasks)
        found = {}
        for size in sizes:
            mine = [row["windows"][0] for row in rows if row["point"] == size]
            found[size] = evidence(size, mine, self.slos)
        return found

    def step(self, index: int, demand: StepDemand, guess: int, erlang: int) -> StepPlan:
        """Search one step from ``guess``: two candidates per batch, galloping away from the
        guess until a meeting and a failing size bracket the answer, then narrowing the
        bracket in thirds until they are one apart."""
        tried: dict[int, Evidence] = {}

        def need(*sizes: int) -> None:
            fresh = [s for s in dict.fromkeys(sizes) if s >= 0 and s not in tried]
            if fresh:
                tried.update(self._try(index, demand, fresh))

        ceiling = max(4 * max(guess, erlang), guess + 50)
        need(max(guess, 1) - 1, max(guess, 1))
        stride = 1
        while True:
            meeting = [n for n, e in tried.items() if e.meets]
            failing = [n for n, e in tried.items() if not e.meets]
            high = min(meeting) if meeting else None
            low = max((n for n in failing if high is None or n < high), default=None)
            if high is not None and (high == 0 or low == high - 1):
                size, shown = high, True
                break
            if high is None:
                assert low is not None
                if low >= ceiling and tried[low].saturated:
                    size, shown = low, False
                    break
                if not tried[low].saturated:
                    # More workers cannot change a thing: keep the fewest that never saturate
                    # (the saturated size below them is one less, or there is none).
                    calm = min(n for n, e in tried.items() if not e.saturated)
                    busy = max(
                        (n for n, e in tried.items() if e.saturated and n < calm), default=-1
                    )
                    if calm - busy <= 1:
                        size, shown = calm, False
                        break
                    third = max(1, (calm - busy) // 3)
                    need(busy + third, min(calm - 1, busy + 2 * third))
                    continue
                stride *= 2
                need(low + stride // 2, low + stride)
            elif low is None:
                stride *= 2
                need(max(0, high - stride // 2), max(0, high - stride))
            else:
                third = max(1, (high - low) // 3)
                need(low + third, min(high - 1, low + 2 * third))
        self.schedule.append((demand.start, size))
        return StepPlan(index, demand, size, erlang, tried, shown)


def _demands(scenario: Scenario, step: float, model: ErlangModel) -> list[StepDemand]:
    starts = [i * step for i in range(math.ceil(scenario.duration / step - 1e-9))]
    arrivals = session_arrivals(scenario)
    config = scenario.sim_config()
    within = max(scenario.sample_every, min(step / 12, 300.0))
    return demand_per_step(
        arrivals,
        starts,
        step,
        scenario.sessions.length.mean,
        model,
        config.sessions.drain_base_seconds,
        within,
    )


def _confirm(result: PlanResult, runner: Runner, seed: int, progress: bool) -> pd.DataFrame:
    scenario = result.scenario
    windows = tuple((s.start, min(s.end, scenario.duration)) for s in result.steps)
    end = max(scenario.duration + scenario.cooldown, scenario.duration + result.tail)
    tasks = []
    for point, schedule in enumerate((result.schedule, result.erlang_c_schedule)):
        for r in range(result.replications):
            tasks.append(
                WindowTask(
                    point=point,
                    replication=r,
                    seed=derived_seed(seed, "confirm", r),
                    scenario=with_schedule(scenario, schedule),
                    arrivals_from=0.0,
                    arrivals_until=math.inf,
                    end=end,
                    windows=windows,
                )
            )
    rows = runner.map(run_window, tasks, progress=progress, desc="confirm")
    flat = []
    for row in rows:
        for index, metrics in enumerate(row["windows"]):
            flat.append(
                {"point": row["point"] * len(windows) + index, "plan": PLANS[row["point"]],
                 "step": index, "replication": row["replication"], **metrics}
            )  # fmt: skip
    runs = pd.DataFrame(flat)
    metrics = [slo.metric for slo in result.slos]
    table = intervals(runs, ("plan", "step"), metrics)
    grouped = runs.groupby(["plan", "step"])
    counts = grouped[list(COUNTS)].sum()
    counts["busy_at_start"] = grouped["busy_at_start"].mean()
    table = table.merge(counts.reset_index(), on=["plan", "step"], how="left")
    by_metric = {slo.metric: slo for slo in result.slos}
    verdicts = [
        judged(by_metric[str(row["metric"])], row["mean"], row["ci_low"], row["ci_high"],
               idle({name: float(row[name]) for name in COUNTS}))
        for row in table.to_dict("records")
    ]  # fmt: skip
    table["target"] = [by_metric[m].target for m in table["metric"]]
    table["op"] = [by_metric[m].op for m in table["metric"]]
    table["met"] = [met for met, _ in verdicts]
    table["shown"] = [shown for _, shown in verdicts]
    # The favourable end beyond the target too: the miss is shown at 95 %, not bad luck.
    table["shown_missed"] = [
        not math.isnan(hi) and not by_metric[m].holds(by_metric[m].unfavourable(hi, lo))
        for m, lo, hi in zip(table["metric"], table["ci_low"], table["ci_high"], strict=True)
    ]
    table["start_seconds"] = table["step"].map({s.index: s.start for s in result.steps})
    return table


def _objectives(slos: Sequence[str | Slo]) -> tuple[Slo, ...]:
    """``slos`` parsed (``Slo`` objects kept as given, their notes too)."""
    if slos and all(isinstance(s, Slo) for s in slos):
        return tuple(s for s in slos if isinstance(s, Slo))
    return parse_slos([s.text if isinstance(s, Slo) else s for s in slos])


def plan_capacity(
    scenario: Scenario | str | Path,
    slos: Sequence[str | Slo],
    *,
    step: float = DEFAULT_STEP,
    replications: int = 5,
    warmup: float | None = None,
    worker_cost: float | None = None,
    workers: int = 1,
    dask_client: Any = None,
    setup: Callable[[], None] | None = None,
    progress: bool = False,
    confirm: bool = True,
    seed: int | None = None,
) -> PlanResult:
    """Plan the pool of ``scenario`` (a ``Scenario`` or a YAML path) step by step under
    ``slos`` (``"no_capacity_rate<=0.01"`` or ``Slo``), then confirm it (see the module).

    ``step``: seconds per step (a whole number of the scenario's ``sample_every``);
    ``replications`` (>= 2) per candidate and per confirmation; ``warmup``: seconds simulated
    before each step (default: four mean holding times, rounded up to the grid: the sessions
    running when a step begins started within it, bar a few); ``worker_cost``: per
    worker-hour, for the cost column; ``workers``: local processes, or ``dask_client`` (a
    ``distributed.Client``); ``setup``: called first in each local process; ``progress``: a
    bar over the steps and the confirmation; ``seed``: the base of every seed (default: the
    scenario's). Raises ``SloError`` or ``PlanError`` on bad input.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    objectives = _objectives(slos)
    if replications < 2:
        raise PlanError("replications must be >= 2: one replication gives no interval")
    model = ErlangModel.of(scenario)
    config = scenario.sim_config()
    holding = model.startup_latency + scenario.sessions.length.mean
    every = scenario.sample_every
    if warmup is None:
        warmup = math.ceil(4 * holding / every) * every
    problems = _grid_problems(scenario, step, warmup)
    if problems:
        raise PlanError("; ".join(problems))
    timeout = config.limits.startup_timeout_seconds
    tail = math.ceil(min(timeout, scenario.horizon) + retry_span(scenario) + every) / every
    tail = math.ceil(tail) * every
    base = scenario.seed if seed is None else seed
    demands = _demands(scenario, step, model)
    planned: list[StepPlan] = []
    with open_runner(workers, dask_client=dask_client, setup=setup) as runner:
        search = _Search(scenario, objectives, runner, replications, warmup, tail, base)
        with progress_bar(len(demands), progress, desc="plan", unit="step") as bar:
            offsets: list[int] = []  # how far the last steps' plans fell from Erlang C's
            for index, demand in enumerate(demands):
                erlang = erlang_c_workers(model, demand, objectives)
                erlang = erlang if erlang is not None else _LARGE
                offset = round(statistics.median(offsets[-3:])) if offsets else 0
                guess = max(0, erlang + offset) if demand.arrivals else 0
                planned.append(search.step(index, demand, guess, erlang))
                if demand.arrivals and planned[-1].shown:
                    offsets.append(planned[-1].workers - erlang)
                bar.update(1)
        result = PlanResult(
            scenario, objectives, step, warmup, tail, replications, worker_cost,
            tuple(planned), None,
        )  # fmt: skip
        if not confirm:
            return result
        confirmation = _confirm(result, runner, base, progress)
    mine = confirmation[confirmation["plan"] == "plan"]
    totals = mine.drop_duplicates(["step"])[list(COUNTS)].sum()
    # Judged against the planned pool, not the scenario's own size (the plan replaces it).
    planned_pool = result.scenario_with_plan()
    notes = binding_limits(planned_pool, {str(k): float(v) for k, v in totals.items()})
    notes += [
        f"step {s.index} ({s.start / 3600:g} h): the objectives could not be shown met at "
        f"{s.workers} workers, where the pool never saturated; {replications} replications "
        "hold too few sessions for the interval to reach the target (add replications)"
        for s in planned
        if not s.shown
    ]
    notes += [f"note: {slo.note}" for slo in objectives if slo.note]
    if not any(slo.metric == "no_capacity_rate" for slo in objectives):
        notes.append(
            "no objective on no_capacity_rate: the waits count only the sessions a worker "
            "took, so a pool too small to take them would look fast; add one"
        )
    return PlanResult(
        scenario, objectives, step, warmup, tail, replications, worker_cost,
        tuple(planned), confirmation, tuple(notes),
    )  # fmt: skip
