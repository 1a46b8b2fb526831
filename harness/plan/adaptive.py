"""One step's search for the fewest workers, adding replications until the decision is shown.

Why adaptive (PLAN-9): with a few replications a rare event's interval is wide, so whether a
size meets a target near it is decided by the replications' luck, and identical hours got sizes
several workers apart. Here the chosen size's interval meets every objective (its unfavourable
end), and the size one below is judged too: shown to miss one (its favourable end beyond the
target: ``shown``), or missing one by its estimate (``estimate``: more replications would mostly
show that miss, so none are spent on it). While the size below meets by its estimate and only
its interval is too wide to tell, both get twice the replications, up to a stated cap: the
boundary then moves to where the rates put it, not where the noise did; a step that reaches the
cap undecided keeps the smallest size shown to meet, and says so (``cap``); when one fewer's
interval is no wider than one worker's effect, more replications could move the answer by a
worker at most, and none are spent (``near``). A busy step is mostly decided at its first look.
What the cap cannot do: where one worker moves a rare event's rate by less than the interval's
half-width at the cap (a few sessions an hour, a 1 % target), the smallest size shown still
depends on the replications' luck, and identical steps can end two or three workers apart.

Why the intervals are wider than 95 % at each look: adding replications until an interval
clears a target gives a size that truly misses several chances to clear it by luck, so a
nominal 95 % interval looked at repeatedly covers less than 95 % (P. Armitage, C. K. McPherson
and B. C. Rowe, "Repeated significance tests on accumulating data", J. R. Statist. Soc. A 132
(1969) 235-244). The looks are planned before the search (the replications double from the
first count to the cap) and the 5 % error is spent over them (``Looks``: half at the first,
the rest shared by the others), so by the union bound a size is called met falsely with at
most 5 % chance however many looks it took. (Group-sequential boundaries, S. J. Pocock,
Biometrika 64 (1977), spend the error less conservatively; the union bound needs no assumption
about how the looks correlate.) A size shown to meet keeps its look: only the size below it is
given more replications.

How a step is searched, replications aside, is as before: candidates two at a time, galloping
from a guess until a meeting and a missing size bracket the answer, narrowing in thirds; a size
whose pool never saturated yet is not shown to meet cannot be helped by more workers (a quiet
step); a step still missing at the ceiling cannot be met at any size tried. Every evaluation is
kept (``SearchRecord``), for ``search.csv``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.plan.baseline import StepDemand
from harness.plan.schedule import asks, scheduled
from harness.plan.search import Evidence, WindowTask, derived_seed, evidence, run_window
from harness.plan.slo import Slo
from harness.scenarios.model import Scenario
from harness.sweep.aggregate import CONFIDENCE
from harness.sweep.execute import Runner

__all__ = ["DECISIONS", "Looks", "StepOutcome", "StepSearch"]

#: How a step was decided → what it means, for a report.
DECISIONS: dict[str, str] = {
    "shown": "the size meets every objective and one fewer worker is shown to miss one",
    "estimate": "the size meets every objective; one fewer misses one by its estimate, though "
    "not beyond noise",
    "near": "the size meets every objective; one fewer meets them by its estimate, not shown, "
    "but within a worker: its interval is no wider than one worker's effect",
    "cap": "the size meets every objective; one fewer meets them by its estimate but was still "
    "undecided at the replication cap (one fewer may suffice)",
    "quiet": "no size could show the objectives: the pool never saturated, and even the "
    "replication cap held too few sessions for the interval to reach the target",
    "unmet": "no size tried met the objectives: the search's ceiling was reached, or even the "
    "estimate missed at a size whose pool never saturated (more workers cannot help)",
}


@dataclass(frozen=True, slots=True)
class Looks:
    """The planned replication counts of a step (doubling from ``first`` to ``cap``) and the
    confidence of each look's intervals: the first look spends half the 5 % error, the later
    ones share the other half (a union bound, so any split summing to 5 % keeps a false "met"
    within 5 %; most steps are decided at the first look, which this keeps the least wide)."""

    first: int
    cap: int

    @property
    def counts(self) -> tuple[int, ...]:
        counts = [self.first]
        while counts[-1] < self.cap:
            counts.append(min(2 * counts[-1], self.cap))
        return tuple(counts)

    def confidence_at(self, count: int) -> float:
        """The confidence of the intervals judged on ``count`` replications."""
        error = 1.0 - CONFIDENCE
        looks = len(self.counts)
        if looks == 1:
            return CONFIDENCE
        spent = error / 2 if count <= self.first else error / 2 / (looks - 1)
        return 1.0 - spent

    @property
    def confidence(self) -> float:
        """The first look's confidence (the one most steps are decided at)."""
        return self.confidence_at(self.first)

    def after(self, count: int) -> int | None:
        """The next planned count after ``count`` (``None``: the cap is reached)."""
        return next((c for c in self.counts if c > count), None)


@dataclass(frozen=True)
class StepOutcome:
    """A step searched: the size chosen, how it was decided (``DECISIONS``) and every size's
    last evidence."""

    workers: int
    decision: str
    tried: dict[int, Evidence]


@dataclass
class StepSearch:
    """The search of a plan: the scenario it simulates, the schedule fixed so far (each step's
    (start, end, workers)), and how it simulates."""

    scenario: Scenario
    slos: tuple[Slo, ...]
    runner: Runner
    looks: Looks
    warmup: float
    tail: float
    seed: int
    lead: float
    fixed: list[tuple[float, float, int]] = field(default_factory=list)
    #: Every evaluation: (step index, size, evidence), in order.
    record: list[tuple[int, int, Evidence]] = field(default_factory=list)

    def _scenario(self, demand: StepDemand, size: int) -> Scenario:
        plan = asks([*self.fixed, (demand.start, demand.end, size)], self.lead)
        return scheduled(self.scenario, plan, self.lead)

    def _run(
        self, index: int, demand: StepDemand, wanted: dict[int, int], rows: dict[int, list[Any]]
    ) -> dict[int, Evidence]:
        """Top every size of ``wanted`` up to its count of replications (the same seeds for
        every size: common random numbers) and judge it."""
        tasks = []
        for size, count in wanted.items():
            scenario = self._scenario(demand, size)
            for replication in range(len(rows.setdefault(size, [])), count):
                tasks.append(
                    WindowTask(
                        point=size,
                        replication=replication,
                        seed=derived_seed(self.seed, "search", index, replication),
                        scenario=scenario,
                        arrivals_from=max(0.0, demand.start - self.warmup),
                        arrivals_until=demand.end,
                        end=demand.end + self.tail,
                        windows=((demand.start, demand.end),),
                    )
                )
        for row in sorted(self.runner.map(run_window, tasks), key=lambda r: r["replication"]):
            rows[row["point"]].append(row["windows"][0])
        found = {}
        for size in wanted:
            confidence = self.looks.confidence_at(len(rows[size]))
            found[size] = evidence(size, rows[size], self.slos, confidence)
            self.record.append((index, size, found[size]))
        return found

    def step(self, index: int, demand: StepDemand, guess: int, ceiling: int) -> StepOutcome:
        """Search one step from ``guess`` (see the module); fix its size in the schedule."""
        tried: dict[int, Evidence] = {}
        rows: dict[int, list[Any]] = {}
        count = self.looks.first

        def need(*sizes: int, more: Callable[[int], bool] = lambda _s: False) -> None:
            wanted = {
                s: count
                for s in dict.fromkeys(sizes)
                if s >= 0 and (s not in tried or (more(s) and tried[s].replications < count))
            }
            if wanted:
                tried.update(self._run(index, demand, wanted, rows))

        need(max(guess, 1) - 1, max(guess, 1))
        stride = 1
        while True:
            meeting = [n for n, e in tried.items() if e.meets]
            high = min(meeting) if meeting else None
            below = [n for n in tried if high is None or n < high]
            low = max(below, default=None)
            if high is not None and (high == 0 or low == high - 1):
                if high > 0 and tried[high - 1].replications < count:
                    need(high - 1, more=lambda _s: True)  # judged on as many as the last look
                    continue
                if high == 0 or tried[high - 1].fails:
                    decision = "shown"
                    break
                if not tried[high - 1].estimated:
                    # One fewer misses by its estimate: more replications would only show
                    # the miss (or, rarely, that it suffices by a hair); they are not spent.
                    decision = "estimate"
                    break
                if self._within_a_worker(tried[high - 1], tried[high]):
                    # The interval of one fewer is no wider than what one worker changes: more
                    # replications would move the boundary by a worker at most.
                    decision = "near"
                    break
                following = self.looks.after(count)
                if following is None:
                    decision = "cap"
                    break
                count = following
                need(high - 1, more=lambda _s: True)  # the size shown to meet stays shown
                continue
            if high is None:
                assert low is not None
                if not tried[low].saturated:
                    # More workers cannot change a thing; more replications might show it.
                    calm = min(n for n, e in tried.items() if not e.saturated)
                    busy = max(
                        (n for n, e in tried.items() if e.saturated and n < calm), default=-1
                    )
                    if calm - busy > 1:
                        third = max(1, (calm - busy) // 3)
                        need(busy + third, min(calm - 1, busy + 2 * third))
                        continue
                    following = self.looks.after(count)
                    if following is None:
                        # Quiet when the estimate meets and only its interval is too wide;
                        # unmet when even the estimate misses where the pool never saturates.
                        decision = "quiet" if tried[calm].estimated else "unmet"
                        high = calm
                        break
                    count = following
                    need(calm, more=lambda _s: True)
                    continue
                if low >= ceiling:
                    high, decision = low, "unmet"
                    break
                stride *= 2
                need(low + stride // 2, low + stride)
            elif low is None:
                stride *= 2
                need(max(0, high - stride // 2), max(0, high - stride))
            else:
                third = max(1, (high - low) // 3)
                need(low + third, min(high - 1, low + 2 * third))
        assert high is not None
        self.fixed.append((demand.start, demand.end, high))
        return StepOutcome(high, decision, tried)

    def _within_a_worker(self, fewer: Evidence, chosen: Evidence) -> bool:
        """Whether, for every objective whose interval one fewer worker leaves undecided, that
        interval's unfavourable half is no wider than the step from one fewer to the chosen
        size: then the boundary is known to within a worker."""
        for slo in self.slos:
            rows = [e.table[e.table["metric"] == slo.metric].iloc[0] for e in (fewer, chosen)]
            (mean, low, high), (other, _, _) = (
                (float(r["mean"]), float(r["ci_low"]), float(r["ci_high"])) for r in rows
            )
            if slo.holds(slo.unfavourable(low, high)):
                continue
            half = abs(slo.unfavourable(low, high) - mean)
            if not half <= abs(mean - other):  # NaN: unknown, so not within a worker
                return False
        return True

    def schedule(self) -> list[tuple[float, int]]:
        """The asks of the schedule fixed so far."""
        return asks(self.fixed, self.lead)
