"""The classic baselines a plan is compared with: Erlang C per interval (stationary staffing),
and beside it M/M/c+D (Erlang A with the deterministic patience a start-up timeout is).

Why: call centres size each interval on its own with Erlang C, taking the interval's arrivals as
a stationary Poisson stream and ignoring everything that moves within it or crosses its edges. A
plan that simulates the traffic should beat it where those assumptions break (a flash crowd
inside the hour, sessions carried over from a busier hour), and should say so. Per-period
Erlang C is known to miss delay targets when demand moves within the day (L. V. Green,
P. J. Kolesar and J. Soares, "Improving the SIPP approach for staffing service systems that have
cyclic demands", Operations Research 49 (2001); L. V. Green, P. J. Kolesar and W. Whitt,
"Coping with time-varying demand when setting staffing requirements for a service system",
POMS 16 (2007)). Erlang C also has infinite patience, where a session leaves at the start-up
timeout; M/M/c+D (``harness.erlang``) models exactly that, so where the two differ the patience
is why.

Each step's demand is its *expected* arrivals, read from the scenario's rates
(``harness.plan.demand.RateCurve``: declared rates, a recording's fitted rate), never one seed's
draw, so identical hours get identical baselines. The offered load is ``a = λ · E[H]`` where the
holding time ``H`` of a worker is the mean start-up latency (boot and first frame), the mean
session length (recorded lengths where the recording has them) and the drain's base. The
Erlang-C plan of a step is the smallest ``c > a`` whose M/M/c readings (``harness.erlang``;
``δ = c/E[H] - λ``, ``C`` the Erlang C probability of waiting) meet every objective:

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

The M/M/c+D plan is the smallest ``c`` whose readings with every session patient for the
start-up timeout τ meet every objective: ``no_capacity_rate`` = P(abandon);
``placement_wait_probability`` = the share of served sessions that waited; the mean and 95th
percentile of the placement wait of served sessions; the first-frame waits plus the mean
start-up latency; ``mean_utilization`` = ``λ(1 - P(abandon))E[H]/c``; no reading of the queue's
bound (``n/a``: that objective does not size it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from harness.erlang import (
    erlang_b,
    erlang_c,
    mmc_deterministic_patience,
    mmc_deterministic_patience_wait_quantile,
)
from harness.plan.demand import RateCurve
from harness.plan.slo import Slo
from harness.scenarios.model import Scenario

__all__ = [
    "READINGS",
    "ErlangModel",
    "StepDemand",
    "demand_per_step",
    "erlang_a_workers",
    "erlang_c_workers",
]

#: Metric → how Erlang C reads it (the module's list, one line each, for a plan's report).
READINGS: dict[str, str] = {
    "placement_wait_probability": "C, the probability of waiting",
    "mean_placement_wait_seconds": "C/δ",
    "p95_placement_wait_seconds": "max(0, ln(C/0.05)/δ), from P(W > t) = C·e^(-δt)",
    "mean_first_frame_wait_seconds": "C/δ plus the mean start-up latency",
    "p95_first_frame_wait_seconds": "the placement wait's 95th percentile plus the mean start-up "
    "latency",
    "no_capacity_rate": "P(W > τ) = C·e^(-δτ), τ the start-up timeout (infinite patience, the "
    "time-out read as the wait's tail)",
    "refused_capacity_rate": "P(Q >= K) = C·(a/c)^K, K the queue's bound",
    "first_attempt_at_capacity_rate": "P(Q >= K) = C·(a/c)^K, K the queue's bound",
    "mean_utilization": "a/c",
}

#: Above this many workers the baseline gives up (a step it cannot staff is reported as such).
_MOST = 100_000


@dataclass(frozen=True, slots=True)
class StepDemand:
    """One step's traffic: its expected arrivals, their rate, the mean holding time, the
    offered load, how far the busiest sub-interval's rate rose above the step's mean
    (``peak_ratio``, ``peak_count`` the arrivals expected in it) and whether that rise is beyond
    Poisson noise (``peak_shown``: a rate that moves does; one replayed day's counts must pass
    a scan test at 5 %)."""

    start: float
    end: float
    arrivals: float
    mean_holding_seconds: float
    peak_ratio: float
    peak_count: float
    peak_shown: bool = True

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

    def patient_reading(self, metric: str, servers: int, demand: StepDemand) -> float:
        """M/M/c+D's reading of ``metric`` for ``servers`` workers, every session patient for
        the start-up timeout (see the module); NaN where it has none."""
        if demand.arrivals == 0:
            return 0.0
        if self.rejects or servers == 0:
            return self.reading(metric, servers, demand)
        rate, holding = demand.rate_per_second, demand.mean_holding_seconds
        tau = self.startup_timeout
        queue = mmc_deterministic_patience(servers, rate, holding, tau)
        served = 1.0 - queue.p_abandon
        wait = queue.mean_wait_served or 0.0
        p95 = mmc_deterministic_patience_wait_quantile(servers, rate, holding, tau, 0.95)
        waited = (queue.p_wait - queue.p_abandon) / served if served > 0 else 1.0
        readings = {
            "placement_wait_probability": waited,
            "mean_placement_wait_seconds": wait,
            "p95_placement_wait_seconds": p95,
            "mean_first_frame_wait_seconds": wait + self.startup_latency,
            "p95_first_frame_wait_seconds": p95 + self.startup_latency,
            "no_capacity_rate": queue.p_abandon,
            "mean_utilization": rate * served * holding / servers,
        }
        return readings.get(metric, math.nan)

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


def erlang_a_workers(model: ErlangModel, demand: StepDemand, slos: Sequence[Slo]) -> int | None:
    """The smallest pool whose M/M/c+D readings meet every objective (``None``: none up to a
    hundred thousand workers); an objective it has no reading of does not size it."""
    if demand.arrivals == 0:
        return 0
    servers = 1
    while servers <= _MOST:
        if all(slo.holds(model.patient_reading(slo.metric, servers, demand)) for slo in slos):
            return servers
        servers += 1
    return None


def _scan_p_value(most: float, mean: float, bins: int) -> float:
    """The chance that the busiest of ``bins`` Poisson counts of mean ``mean`` reaches
    ``most`` (the counts taken as independent: a scan statistic's simple bound)."""
    if mean <= 0:
        return 1.0
    below = float(stats.poisson.cdf(math.ceil(most) - 1, mean))
    return 1.0 - below**bins


def demand_per_step(
    curve: RateCurve,
    steps: Sequence[tuple[float, float]],
    default_length: float,
    model: ErlangModel,
    drain: float,
    within: float,
    noisy: bool = False,
) -> list[StepDemand]:
    """Each step's ``StepDemand`` (``steps``: start, end) from the expected arrivals of
    ``curve``; ``within`` is the sub-interval the peak rate is measured over; ``noisy``: the
    curve holds one day's own arrivals (an exact replay), so a peak must pass a scan test."""
    found = []
    for start, end in steps:
        expected = curve.expected(start, end)
        mean_length = curve.mean_length(start, end, default_length)
        bins = max(1, round((end - start) / within))
        width = (end - start) / bins
        counts = [curve.expected(start + i * width, start + (i + 1) * width) for i in range(bins)]
        most = max(counts)
        peak = most * bins / expected if expected > 0 else 1.0
        shown = _scan_p_value(most, expected / bins, bins) < 0.05 if noisy else True
        holding = model.startup_latency + mean_length + drain
        found.append(StepDemand(start, end, expected, holding, peak, most, shown))
    return found
