"""The classic baseline a plan is compared with: Erlang C per interval (stationary staffing).

Why: call centres size each interval on its own with Erlang C, taking the interval's arrivals as
a stationary Poisson stream and ignoring everything that moves within it or crosses its edges. A
plan that simulates the traffic should beat it where those assumptions break (a flash crowd
inside the hour, sessions carried over from a busier hour), and should say so.

Each step's demand is the session arrivals the scenario's seed draws in it
(``harness.runner.engine.session_arrivals``, recorded ones included), its offered load
``a = λ · E[H]`` where the holding time ``H`` of a worker is the mean start-up latency (boot
and first frame), the mean session length (recorded lengths where the recording has them) and
the drain's base. The Erlang-C plan of a step is the smallest ``c > a`` whose M/M/c readings
(``harness.erlang``; ``δ = c/E[H] - λ``, ``C`` the Erlang C probability of waiting) meet every
objective:

- ``placement_wait_probability`` = ``C``; ``mean_placement_wait_seconds`` = ``C/δ``;
  ``p95_placement_wait_seconds`` = the 95th percentile of the M/M/c wait,
  ``max(0, ln(C/0.05)/δ)`` (``P(W > t) = C·e^{-δt}``);
- the first-frame waits: the placement wait's plus the mean start-up latency;
- ``no_capacity_rate`` = ``P(W > τ) = C·e^{-δτ}``, the share that would wait longer than the
  start-up timeout ``τ`` (Erlang C has infinite patience; this reads a time-out as the tail
  of its wait);
- ``refused_capacity_rate`` and ``first_attempt_at_capacity_rate`` =
  ``P(Q >= K) = C·(a/c)^K``, the chance of finding the queue's bound ``K`` reached (Erlang B
  when the scheduler rejects instead of queueing: then nothing waits);
- ``mean_utilization`` = ``a/c``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.erlang import erlang_b, erlang_c
from harness.plan.slo import Slo
from harness.scenarios.model import Scenario

__all__ = ["ErlangModel", "StepDemand", "demand_per_step", "erlang_c_workers"]

#: Above this many workers the baseline gives up (a step it cannot staff is reported as such).
_MOST = 100_000


@dataclass(frozen=True, slots=True)
class StepDemand:
    """One step's traffic: arrivals, their rate, the mean holding time, the offered load and
    how far the busiest sub-interval's rate rose above the step's mean (``peak_ratio``)."""

    start: float
    end: float
    arrivals: int
    mean_holding_seconds: float
    peak_ratio: float
    peak_count: int  # arrivals in the busiest sub-interval

    @property
    def rate_per_second(self) -> float:
        return self.arrivals / (self.end - self.start)

    @property
    def offered_load(self) -> float:
        """Erlangs: arrivals per second times the mean holding time."""
        return self.rate_per_second * self.mean_holding_seconds


@dataclass(frozen=True, slots=True)
class ErlangModel:
    """What Erlang C needs of the service besides the demand."""

    startup_timeout: float
    queue_bound: int | None  # None: no bound
    rejects: bool  # the scheduler refuses instead of queueing
    startup_latency: float  # mean boot plus first-frame latency, seconds

    @classmethod
    def of(cls, scenario: Scenario) -> ErlangModel:
        config = scenario.sim_config()
        scheduler = config.scheduler
        bound = None if scenario.limits.queue == "off" else scheduler.max_queue_length
        return cls(
            startup_timeout=config.limits.startup_timeout_seconds,
            queue_bound=bound,
            rejects=scheduler.admission_policy == "reject",
            startup_latency=scheduler.worker_boot.mean + scheduler.first_frame_latency.mean,
        )

    def reading(self, metric: str, servers: int, demand: StepDemand) -> float:
        """Erlang C's reading of ``metric`` for ``servers`` workers (see the module)."""
        load = demand.offered_load
        if demand.arrivals == 0:
            return 0.0
        if servers <= load and not self.rejects:
            return math.inf if metric.endswith("seconds") else 1.0
        if self.rejects:
            blocked = erlang_b(servers, load)
            readings = {"refused_capacity_rate": blocked, "first_attempt_at_capacity_rate": blocked}
            if metric == "mean_utilization":
                return load * (1 - blocked) / servers if servers else 1.0
            if metric.endswith("first_frame_wait_seconds"):
                return self.startup_latency
            return readings.get(metric, 0.0)
        waits = erlang_c(servers, load)
        delta = servers / demand.mean_holding_seconds - demand.rate_per_second
        p95 = max(0.0, math.log(waits / 0.05) / delta) if waits > 0.05 else 0.0
        full = 0.0 if self.queue_bound is None else waits * (load / servers) ** self.queue_bound
        readings = {
            "placement_wait_probability": waits,
            "mean_placement_wait_seconds": waits / delta,
            "p95_placement_wait_seconds": p95,
            "mean_first_frame_wait_seconds": waits / delta + self.startup_latency,
            "p95_first_frame_wait_seconds": p95 + self.startup_latency,
            "no_capacity_rate": waits * math.exp(-delta * self.startup_timeout),
            "refused_capacity_rate": full,
            "first_attempt_at_capacity_rate": full,
            "mean_utilization": load / servers,
        }
        return readings[metric]


def erlang_c_workers(model: ErlangModel, demand: StepDemand, slos: Sequence[Slo]) -> int | None:
    """The smallest pool whose Erlang-C readings meet every objective (``None``: none up to a
    hundred thousand workers)."""
    if demand.arrivals == 0:
        return 0
    servers = max(1, math.floor(demand.offered_load) + (0 if model.rejects else 1))
    while servers <= _MOST:
        if all(slo.holds(model.reading(slo.metric, servers, demand)) for slo in slos):
            return servers
        servers += 1
    return None


def demand_per_step(
    arrivals: Sequence[tuple[float, float | None]],
    starts: Sequence[float],
    step: float,
    default_length: float,
    model: ErlangModel,
    drain: float,
    within: float,
) -> list[StepDemand]:
    """Each step's ``StepDemand`` from the arrivals (time, recorded length or ``None``);
    ``within`` is the sub-interval the peak rate is measured over."""
    times = np.asarray([at for at, _ in arrivals], dtype=float)
    lengths = np.asarray(
        [default_length if length is None else length for _, length in arrivals], dtype=float
    )
    bins = max(1, round(step / within))
    steps = []
    for start in starts:
        low, high = np.searchsorted(times, [start, start + step])
        inside = times[low:high]
        mean_length = float(lengths[low:high].mean()) if len(inside) else default_length
        counts = np.bincount(
            np.minimum(((inside - start) / within).astype(int), bins - 1), minlength=bins
        )
        most = int(counts.max())
        peak = most * bins / len(inside) if len(inside) else 1.0
        holding = model.startup_latency + mean_length + drain
        steps.append(StepDemand(start, start + step, len(inside), holding, peak, most))
    return steps
