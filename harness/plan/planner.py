"""``plan_capacity``: the fewest workers per step that meet every objective, then a confirmation.

What a plan sizes for, and against what (each said in its module):

1. **Demand** (``harness.plan.demand``): every replication a fresh day (a recording's fitted
   rates drawn from their uncertainty, or declared rates), unless ``exact_replay``; the report
   states what the 95 % covers and on how many recorded days it rests.
2. **Every client** (``harness.plan.confirm.unthrottled``): the search lifts the limits that
   refuse clients before the pool (concurrency caps, the rate limit, credits), so each objective
   counts the whole demand; where the scenario's own limits would refuse clients, the
   confirmation of the overlay as configured says so at each step (``as_limited`` plans what
   the limits let through instead).
3. **The search** (``harness.plan.adaptive``): step by step, from the Erlang-C size moved by
   how far the last three steps fell from theirs; candidates simulated over the same seeds,
   replications added until the decision is shown or the cap is reached; the step's size fixed
   in the schedule (asked for a provisioning lead time before it serves,
   ``harness.plan.schedule``) before the next step is searched.
4. **The confirmation** (``harness.plan.confirm``): the overlay the plan writes, run with fresh
   seeds, beside the Erlang-C schedule's; ``exit_code`` is 1 when a step could not be met at
   any size tried or the confirmation misses beyond doubt.

Objectives no pool can meet are refused first (``harness.plan.feasible``, ``PlanError``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.plan.adaptive import DECISIONS, Looks, StepSearch
from harness.plan.baseline import (
    ErlangModel,
    StepDemand,
    demand_per_step,
    erlang_a_workers,
    erlang_c_workers,
)
from harness.plan.confirm import LIMIT_CAUSES, LIMIT_NAMES, refused_by_limits, unthrottled
from harness.plan.confirm import confirm as run_confirmation
from harness.plan.demand import DemandStatement, plan_demand, rate_curve
from harness.plan.feasible import impossible
from harness.plan.schedule import asks, held, scheduled
from harness.plan.search import COUNTS, Evidence, retry_span
from harness.plan.slo import Slo, parse_slos
from harness.runner.binding import binding_limits
from harness.scenarios.loader import load_scenario, parse_scenario, read_scenario
from harness.scenarios.model import Scenario
from harness.scenarios.overlay import merge
from harness.scenarios.parts import Recorded
from harness.sweep.execute import open_runner, progress_bar

__all__ = ["DEFAULT_STEP", "PlanError", "PlanResult", "StepPlan", "plan_capacity"]

#: The Erlang size of a step it cannot staff (none up to ``baseline``'s limit).
_LARGE = 100_000
#: A step's length unless told otherwise: an hour, the staffing interval of the classic plans.
DEFAULT_STEP = 3600.0
#: The plans a confirmation runs, in order (the third only when limits refused clients).
PLANS: tuple[str, ...] = ("plan", "erlang_c", "plan_unthrottled")


class PlanError(ValueError):
    """A plan that cannot be made as asked: its step or warm-up off the scenario's grid, too
    few replications, or an objective no pool can meet."""


@dataclass(frozen=True)
class StepPlan:
    """One step: its demand, the size chosen and how (``decision``, ``adaptive.DECISIONS``),
    the Erlang-C and M/M/c+D sizes, and every candidate's last evidence (size → ``Evidence``)."""

    index: int
    demand: StepDemand
    workers: int
    erlang_c: int
    tried: dict[int, Evidence]
    decision: str = "shown"
    erlang_a: int = 0

    @property
    def shown(self) -> bool:
        """Whether the chosen size was shown to meet every objective."""
        return self.decision in ("shown", "estimate", "near", "cap")

    @property
    def start(self) -> float:
        return self.demand.start

    @property
    def end(self) -> float:
        return self.demand.end


@dataclass(frozen=True)
class PlanResult:
    """What ``plan_capacity`` found. ``table`` is ``plan.csv``, ``search`` is ``search.csv``,
    ``confirmation`` one row per (plan, step, objective); ``overlay`` the scenario changes that
    play the plan (``plan.yaml``), ``deployed`` the scenario they make; ``write(out)`` writes
    them all with the figures and ``report.md``."""

    scenario: Scenario
    slos: tuple[Slo, ...]
    step: float
    warmup: float
    tail: float
    looks: Looks
    worker_cost: float | None
    steps: tuple[StepPlan, ...]
    confirmation: pd.DataFrame | None
    warnings: tuple[str, ...] = field(default=())
    demand: DemandStatement | None = None
    lead: float = 0.0
    source: Path | None = None
    deployed: Scenario | None = None
    overlay: dict[str, Any] = field(default_factory=dict)
    record: tuple[tuple[int, int, Evidence], ...] = ()
    as_limited: bool = False

    @property
    def replications(self) -> int:
        """The replications each candidate starts with (and the confirmation runs)."""
        return self.looks.first

    @property
    def needed(self) -> list[tuple[float, float, int]]:
        return [(s.start, s.end, s.workers) for s in self.steps]

    @property
    def schedule(self) -> list[tuple[float, int]]:
        """The plan's asks: (instant, workers to ask for from then on), ``pool_schedule``."""
        return asks(self.needed, self.lead)

    @property
    def erlang_c_schedule(self) -> list[tuple[float, int]]:
        return asks([(s.start, s.end, s.erlang_c) for s in self.steps], self.lead)

    def epoch(self) -> pd.Timestamp:
        return pd.Timestamp(self.scenario.sim_config().epoch)

    def ask_at(self, step: StepPlan) -> float:
        """When to ask for ``step``'s workers: a lead time before it serves when it needs more
        than the pool held just before; its start otherwise."""
        before = held(self.schedule, self.lead, step.start - 1e-9) if step.start > 0 else 0
        return step.start - self.lead if step.workers > before else step.start

    @property
    def throttled(self) -> dict[int, dict[str, float]]:
        """Per step where a limit acting before the pool refused clients in the confirmation
        of the overlay as configured: its session clients and each such limit's refusals."""
        if self.confirmation is None:
            return {}
        found = {}
        for step, row in refused_by_limits(self.confirmation).iterrows():
            counts = {cause: float(row[f"refused_{cause}"]) for cause in LIMIT_CAUSES}
            if any(counts.values()):
                found[int(str(step))] = {"session_clients": float(row["session_clients"]), **counts}
        return found

    def throttle_notes(self) -> list[str]:
        """One sentence per throttled step: the limits, their share, the pool beside it."""
        notes = []
        for index, found in sorted(self.throttled.items()):
            s = self.steps[index]
            clients = found["session_clients"]
            said = ", ".join(
                f"{LIMIT_NAMES[c]} {found[c] / clients:.1%}" if clients else LIMIT_NAMES[c]
                for c in LIMIT_CAUSES
                if found[c]
            )
            pool = (
                f"the plan's {s.workers} workers are what the limited traffic needs"
                if self.as_limited
                else f"the plan's {s.workers} workers serve the unthrottled demand"
            )
            notes.append(
                f"step {s.index} ({self._when(s.start):%a %H:%M}): as configured, {said} of "
                f"{clients:,.0f} session clients (n = {self.replications} replications) were "
                f"refused before the pool; {pool}"
            )
        return notes

    def _when(self, seconds: float) -> pd.Timestamp:
        return self.epoch() + pd.Timedelta(seconds=seconds)

    @property
    def table(self) -> pd.DataFrame:
        """One row per step (``plan.csv``, ``harness.plan.tables.plan_table``)."""
        from harness.plan.tables import plan_table

        return plan_table(self)

    @property
    def search(self) -> pd.DataFrame:
        """Every size tried (``search.csv``, ``harness.plan.tables.search_table``)."""
        from harness.plan.tables import search_table

        return search_table(self)

    def scenario_with_plan(self) -> Scenario:
        """The scenario that plays the plan: the overlay's (what to run or deploy)."""
        assert self.deployed is not None
        return self.deployed

    @property
    def exit_code(self) -> int:
        """1 when a step could not be met at any size tried, or the confirmation of the plan
        missed an objective beyond doubt; 0 otherwise."""
        if any(s.decision == "unmet" for s in self.steps):
            return 1
        if self.confirmation is not None:
            mine = self.confirmation[self.confirmation["plan"].isin(("plan", "plan_unthrottled"))]
            if mine["missed_beyond_doubt"].any():
                return 1
        return 0

    @property
    def verdict(self) -> str:
        """The plan in one line: met or not, how many steps shown, capped or quiet."""
        decided = {d: sum(s.decision == d for s in self.steps) for d in DECISIONS}
        hours = float(self.table["worker_hours"].sum())
        told = f"{len(self.steps)} steps, {hours:,.0f} worker-hours"
        parts = [f"{decided['shown']} shown"]
        shown = ("estimate", "near", "cap", "quiet", "unmet")
        parts += [f"{decided[d]} {d}" for d in shown if decided[d]]
        if self.exit_code:
            misses = []
            if decided["unmet"]:
                misses.append(f"{decided['unmet']} steps unmet at any size tried")
            if self.confirmation is not None:
                mine = self.confirmation[
                    self.confirmation["plan"].isin(("plan", "plan_unthrottled"))
                ]
                beyond = int(mine["missed_beyond_doubt"].sum())
                if beyond:
                    misses.append(f"{beyond} (step, objective) pairs missed beyond doubt")
            return f"plan: MISSED ({'; '.join(misses)}): {told} ({', '.join(parts)})"
        return f"plan: met ({told}; {', '.join(parts)})"

    def write(self, out: str | Path) -> list[Path]:
        """Write ``plan.csv``, ``search.csv``, ``confirmation.csv``, ``plan.yaml``, the
        figures and ``report.md`` into ``out`` (``harness.plan.report``); returns the paths."""
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


def _objectives(slos: Sequence[str | Slo]) -> tuple[Slo, ...]:
    """``slos`` parsed (``Slo`` objects kept as given, their notes too)."""
    if slos and all(isinstance(s, Slo) for s in slos):
        return tuple(s for s in slos if isinstance(s, Slo))
    return parse_slos([s.text if isinstance(s, Slo) else s for s in slos])


def _demands(scenario: Scenario, step: float, model: ErlangModel) -> list[StepDemand]:
    """Each step's expected demand; the last step ends with the scenario (it may be shorter)."""
    count = math.ceil(scenario.duration / step - 1e-9)
    spans = [(i * step, min((i + 1) * step, scenario.duration)) for i in range(count)]
    curve = rate_curve(scenario)
    within = max(scenario.sample_every, min(step / 12, 300.0))
    exact = any(isinstance(a, Recorded) and a.demand == "exact" for a in scenario.arrivals)
    drain = scenario.sim_config().sessions.drain_base_seconds
    default = scenario.sessions.length.mean
    return demand_per_step(curve, spans, default, model, drain, within, noisy=exact)


def _overlay(scenario: Scenario, planned: Scenario, plan: list[tuple[float, int]], lead: float,
             ) -> dict[str, Any]:  # fmt: skip
    """The changes that make ``scenario`` play the plan: the starting pool and lead time, the
    asks, and the demand the plan drew (recorded arrivals' ``demand`` and ``step``)."""
    changes: dict[str, Any] = {
        "config": {"scheduler": {"workers": plan[0][1] if plan else 0,
                                 "provision_lead_seconds": lead}},
        "pool_schedule": [{"at": at, "workers": workers} for at, workers in plan],
    }  # fmt: skip
    if planned.arrivals != scenario.arrivals:
        changes["arrivals"] = [a.model_dump(mode="json") for a in planned.arrivals]
    return changes


def _base_data(scenario: Scenario, source: Path | None) -> Any:
    return read_scenario(source).data if source is not None else scenario.model_dump(mode="json")


def plan_capacity(
    scenario: Scenario | str | Path,
    slos: Sequence[str | Slo],
    *,
    step: float = DEFAULT_STEP,
    replications: int = 5,
    max_replications: int | None = None,
    warmup: float | None = None,
    worker_cost: float | None = None,
    lead_time: float | None = None,
    exact_replay: bool = False,
    as_limited: bool = False,
    workers: int = 1,
    dask_client: Any = None,
    setup: Callable[[], None] | None = None,
    progress: bool = False,
    confirm: bool = True,
    seed: int | None = None,
    source: str | Path | None = None,
) -> PlanResult:
    """Plan the pool of ``scenario`` (a ``Scenario`` or a YAML path, then its overlay extends
    it) step by step under ``slos`` (``"no_capacity_rate<=0.01"`` or ``Slo``), then confirm it
    (see the module).

    ``step``: seconds per step (a whole number of ``sample_every``; a last step that does not
    fit is shorter, weighted by its length); ``replications`` (>= 2) per candidate at first and
    per confirmation, doubled for an undecided step up to ``max_replications`` (default four
    times as many); ``warmup``: seconds simulated before each step (default: four mean holding
    times, on the grid); ``worker_cost``: per worker-hour; ``lead_time``: the provisioning lead
    time (default: the scenario's ``provision_lead_seconds``); ``exact_replay``: replay
    recordings as recorded; ``as_limited``: size for what the limits let through; ``workers``:
    local processes, or ``dask_client``; ``setup``: called first in each local process;
    ``progress``: bars; ``seed``: the base of every seed (default: the scenario's); ``source``:
    the scenario's file when given as a ``Scenario``. Raises ``SloError`` or ``PlanError``.
    """
    if not isinstance(scenario, Scenario):
        source = Path(scenario)
        scenario = load_scenario(scenario)
    source = None if source is None else Path(source)
    objectives = _objectives(slos)
    cap = 4 * replications if max_replications is None else max_replications
    if replications < 2:
        raise PlanError("replications must be >= 2: one replication gives no interval")
    if cap < replications:
        raise PlanError(f"max replications ({cap}) must be at least the replications")
    if lead_time is not None and lead_time < 0:
        raise PlanError("the lead time must be >= 0")
    lead = (
        scenario.sim_config().scheduler.provision_lead_seconds if lead_time is None else lead_time
    )
    problems = impossible(objectives, scenario)
    if problems:
        raise PlanError("\n".join(problems))
    model = ErlangModel.of(scenario)
    config = scenario.sim_config()
    every = scenario.sample_every
    if warmup is None:
        holding = model.startup_latency + scenario.sessions.length.mean
        warmup = math.ceil(4 * holding / every) * every
    problems = _grid_problems(scenario, step, warmup)
    if problems:
        raise PlanError("; ".join(problems))
    timeout = config.limits.startup_timeout_seconds
    tail = every * math.ceil(
        (min(timeout, scenario.horizon) + retry_span(scenario) + every) / every
    )
    base = scenario.seed if seed is None else seed
    planned, statement = plan_demand(scenario, step, exact_replay)
    searched = planned if as_limited else unthrottled(planned)
    demands = _demands(planned, step, model)
    looks = Looks(replications, cap)
    built: list[StepPlan] = []
    with open_runner(workers, dask_client=dask_client, setup=setup) as runner:
        search = StepSearch(searched, objectives, runner, looks, warmup, tail, base, lead)
        with progress_bar(len(demands), progress, desc="plan", unit="step") as bar:
            offsets: list[int] = []  # how far the last steps' plans fell from Erlang C's
            for index, demand in enumerate(demands):
                erlang = erlang_c_workers(model, demand, objectives)
                erlang = erlang if erlang is not None else _LARGE
                patient = erlang_a_workers(model, demand, objectives)
                offset = round(statistics.median(offsets[-3:])) if offsets else 0
                guess = max(0, erlang + offset) if demand.arrivals > 0 else 0
                ceiling = max(4 * max(guess, erlang), guess + 50)
                found = search.step(index, demand, guess, ceiling)
                built.append(
                    StepPlan(index, demand, found.workers, erlang, found.tried, found.decision,
                             _LARGE if patient is None else patient)
                )  # fmt: skip
                if demand.arrivals > 0 and found.decision in ("shown", "estimate", "near", "cap"):
                    offsets.append(found.workers - erlang)
                bar.update(1)
        plan = asks([(s.start, s.end, s.workers) for s in built], lead)
        overlay = _overlay(scenario, planned, plan, lead)
        base_data = _base_data(scenario, source)
        deployed = parse_scenario(merge(base_data, overlay), "the plan's overlay")
        result = PlanResult(
            scenario, objectives, step, warmup, tail, looks, worker_cost, tuple(built), None,
            (), statement, lead, source, deployed, overlay, tuple(search.record), as_limited,
        )  # fmt: skip
        if not confirm:
            return result
        windows = tuple((s.start, s.end) for s in built)
        end = max(scenario.duration + scenario.cooldown, scenario.duration + tail)
        erlang_deployed = scheduled(deployed, result.erlang_c_schedule, lead)
        schedules = [("plan", deployed), ("erlang_c", erlang_deployed)]
        args = (windows, objectives, replications, end, runner, base, progress)
        confirmation = run_confirmation(schedules, *args)
        throttled = bool(
            confirmation.loc[confirmation["plan"] == "plan",
                             [f"refused_{c}" for c in LIMIT_CAUSES]].to_numpy().sum()
        )  # fmt: skip
        if throttled and not as_limited:
            extra = run_confirmation([("plan_unthrottled", unthrottled(deployed))], *args)
            confirmation = pd.concat([confirmation, extra], ignore_index=True)
    result = dataclasses.replace(result, confirmation=confirmation)
    return dataclasses.replace(result, warnings=tuple(_warnings(result)))


def _warnings(result: PlanResult) -> list[str]:
    """What a reader must know before trusting the plan (its report's and stdout's warnings)."""
    assert result.confirmation is not None and result.deployed is not None
    mine = result.confirmation[result.confirmation["plan"] == "plan"]
    totals = mine.drop_duplicates(["step"])[list(COUNTS)].sum()
    notes = binding_limits(result.deployed, {str(k): float(v) for k, v in totals.items()})
    notes += result.throttle_notes()
    for s in result.steps:
        when = f"step {s.index} ({s.start / 3600:g} h)"
        if s.decision == "quiet":
            notes.append(
                f"{when}: the objectives could not be shown met at {s.workers} workers, where "
                f"the pool never saturated; even {result.looks.cap} replications hold too few "
                "sessions for the interval to reach the target (raise --max-replications)"
            )
        elif s.decision == "unmet":
            notes.append(f"{when}: no size up to {s.workers} workers met the objectives")
        elif s.decision == "cap":
            notes.append(
                f"{when}: {s.workers} workers meet the objectives; {s.workers - 1} was still "
                f"undecided at {result.looks.cap} replications and may suffice"
            )
    notes += [f"note: {slo.note}" for slo in result.slos if slo.note]
    if not any(slo.metric == "no_capacity_rate" for slo in result.slos):
        notes.append(
            "no objective on no_capacity_rate: the waits count only the sessions a worker "
            "took, so a pool too small to take them would look fast; add one"
        )
    return notes
