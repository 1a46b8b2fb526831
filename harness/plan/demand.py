"""The demand a plan sizes for: what its replications play, and the rate its baselines read.

**What the replications vary** (PLAN-6). A recording is one sample of demand, so a plan's
replications replaying it only measure the service's own randomness over that one day: more of
them narrow an interval that says nothing of tomorrow. Unless asked to replay it exactly
(``--exact-replay``), a plan plays each recorded arrival whose ``demand`` is unset as fitted
fresh days (``harness.traffic.fresh``: rates per step, and per block within a step where the
arrivals show one, drawn from their posterior; each arrival a recorded session drawn at random),
each replication a fresh day, at the plan's own step. ``DemandStatement`` says what a plan's
95 % then covers, and on how many recorded days it rests.

**The rate, not one draw** (PLAN-8). The baselines (``harness.plan.baseline``) size a step on
its expected arrivals, read from the scenario's rates (``RateCurve``): a Poisson or diurnal
arrival's declared rate, a burst's count spread over its ``within``, a recording's fitted rate
(or, replayed exactly, its own arrivals). Identical hours then get identical baselines, and
whether demand moves within a step is a property of the rates, not of a seed's luck.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.scenarios.model import Scenario
from harness.scenarios.parts import Burst, Diurnal, Poisson, Recorded
from harness.traffic.fresh import fitted_profile
from harness.traffic.recording import Recording, load_recording

__all__ = ["DemandStatement", "RateCurve", "plan_demand", "rate_curve"]

HOUR = 3600.0
Method = Literal["declared", "fitted", "bootstrap", "exact"]


@dataclass(frozen=True, slots=True)
class DemandStatement:
    """What a plan's replications vary besides the service's dice: each arrival's ``methods``,
    the fewest recorded ``days`` any fitted or bootstrapped demand rests on (``None``: none
    does), and ``covers``, the sentence a report states."""

    methods: tuple[Method, ...]
    days: int | None
    covers: str

    @property
    def exact(self) -> bool:
        return "exact" in self.methods


def _days(arrival: Recorded, step: float) -> int:
    recording = load_recording(arrival.path)
    if arrival.since is not None:
        recording = recording.since(arrival.since)
    return fitted_profile(recording, arrival.period, step).days


def plan_demand(
    scenario: Scenario, step: float, exact_replay: bool = False
) -> tuple[Scenario, DemandStatement]:
    """The scenario a plan simulates (every recorded arrival with no ``demand`` of its own
    played as fitted fresh days at the plan's ``step``, or exactly with ``exact_replay``) and
    what its replications then cover."""
    arrivals = []
    methods: list[Method] = []
    days: list[int] = []
    estimated: list[int] = []
    for arrival in scenario.arrivals:
        if isinstance(arrival, Recorded):
            demand = "exact" if exact_replay else (arrival.demand or "fitted")
            own_step = step if arrival.step is None else arrival.step
            arrival = arrival.model_copy(update={"demand": demand, "step": own_step})
            methods.append(demand)
            if demand != "exact":
                days.append(_days(arrival, own_step))
        else:
            methods.append("declared")
            if isinstance(arrival, Poisson) and arrival.estimated_from_days is not None:
                estimated.append(arrival.estimated_from_days)
        arrivals.append(arrival)
    fewest = min([*days, *estimated]) if days or estimated else None
    return scenario.model_copy(update={"arrivals": tuple(arrivals)}), DemandStatement(
        tuple(methods), fewest, _covers(methods, fewest, estimated)
    )


def _covers(methods: list[Method], days: int | None, estimated: list[int]) -> str:
    said = ["the service's own randomness (start-up times, lengths, the clients' draws)"]
    if "declared" in methods:
        if estimated:
            said.append("Poisson arrivals at rates drawn from their uncertainty")
        else:
            said.append("Poisson arrivals at the scenario's declared rates (taken as known)")
    if "fitted" in methods or "bootstrap" in methods or estimated:
        how = "fitted" if "fitted" in methods or estimated else "bootstrapped"
        said.append(f"demand as {how} from {days} recorded day{'s' if days != 1 else ''}")
    text = "The 95 % covers " + ", and ".join(said) + "."
    if days == 1:
        text += (
            " One recorded day is one sample of demand: its counts bound each rate's "
            "uncertainty, but how days differ beyond Poisson noise (a busy Monday, a quiet "
            "Sunday) is not covered; record more days (a block bootstrap across them, "
            "`demand: bootstrap`, then covers it)."
        )
    if "exact" in methods:
        text += (
            " A recording replayed exactly (`--exact-replay`, or `demand: exact`) is the same "
            "day in every replication: for it the 95 % covers that one day, not the next."
        )
    return text


# -- the rate the baselines read -------------------------------------------------------------


@dataclass(frozen=True)
class RateCurve:
    """Expected arrivals over time: constant ``pieces`` (start, end, arrivals per second) and
    point masses (``points`` sorted, each worth ``weights``), with the mean session length each
    source brings (``lengths``: per piece, per point)."""

    pieces: tuple[tuple[float, float, float, float], ...]  # start, end, rate, mean length
    points: np.ndarray  # instants, sorted
    weights: np.ndarray  # arrivals each
    point_lengths: np.ndarray  # mean length of each point's session

    def expected(self, start: float, end: float) -> float:
        """Expected arrivals in ``[start, end)``."""
        total = sum(rate * max(0.0, min(end, b) - max(start, a)) for a, b, rate, _ in self.pieces)
        low, high = np.searchsorted(self.points, [start, end])
        return total + float(self.weights[low:high].sum())

    def mean_length(self, start: float, end: float, default: float) -> float:
        """The mean session length of the arrivals expected in ``[start, end)``."""
        weight = length = 0.0
        for a, b, rate, mean in self.pieces:
            part = rate * max(0.0, min(end, b) - max(start, a))
            weight += part
            length += part * mean
        low, high = np.searchsorted(self.points, [start, end])
        weight += float(self.weights[low:high].sum())
        length += float((self.weights[low:high] * self.point_lengths[low:high]).sum())
        return length / weight if weight > 0 else default


def _recorded_pieces(
    arrival: Recorded, recording: Recording, duration: float, default: float
) -> tuple[list[tuple[float, float, float, float]], list[tuple[float, float, float]]]:
    """A recorded arrival's rate in the run's time: a fitted profile's pieces per recorded
    period, or (exact) its sessions as points; each with the mean length it brings."""
    if arrival.since is not None:
        recording = recording.since(arrival.since)
    frame = recording.frame
    speed, shift, scale = arrival.speed, arrival.shift, arrival.scale
    lengths = frame["length_seconds"].to_numpy(dtype=float) / speed
    known = lengths[~np.isnan(lengths)]
    overall = float(known.mean()) if len(known) else default
    if arrival.demand in (None, "exact"):
        times = frame["offset_seconds"].to_numpy(dtype=float) / speed + shift
        filled = np.where(np.isnan(lengths), default, lengths)
        keep = (times >= 0) & (times < duration)
        return [], [
            (float(t), scale, float(m)) for t, m in zip(times[keep], filled[keep], strict=True)
        ]
    step = HOUR if arrival.step is None else arrival.step
    profile = fitted_profile(recording, arrival.period, step)
    pieces = []
    for day in range(profile.days):
        for piece in profile.pieces:
            a = (day * arrival.period + piece.start) / speed + shift
            b = (day * arrival.period + piece.end) / speed + shift
            a, b = max(a, 0.0), min(b, duration)
            if b > a:
                pieces.append((a, b, piece.rate * speed * scale, overall))
    return pieces, []


def rate_curve(scenario: Scenario) -> RateCurve:
    """The expected arrivals of ``scenario``'s session clients over ``[0, duration)``."""
    duration = scenario.duration
    default = scenario.sessions.length.mean
    epoch = scenario.sim_config().epoch
    pieces: list[tuple[float, float, float, float]] = []
    points: list[tuple[float, float, float]] = []
    for arrival in scenario.arrivals:
        if isinstance(arrival, Poisson):
            end = duration if arrival.end is None else min(arrival.end, duration)
            pieces.append((arrival.start, end, arrival.rate_per_hour / HOUR, default))
        elif isinstance(arrival, Diurnal):
            offset = epoch.hour * HOUR + epoch.minute * 60 + epoch.second
            for hour in range(math.ceil(duration / HOUR)):
                start = hour * HOUR
                factor = arrival.profile[int((offset + start) // HOUR) % 24]
                rate = arrival.base_rate_per_hour * factor / HOUR
                pieces.append((start, min(start + HOUR, duration), rate, default))
        elif isinstance(arrival, Burst):
            if arrival.within > 0:
                end = min(arrival.at + arrival.within, duration)
                share = (end - arrival.at) / arrival.within if end > arrival.at else 0.0
                if share > 0:
                    rate = arrival.count * share / (end - arrival.at)
                    pieces.append((arrival.at, end, rate, default))
            elif arrival.at < duration:
                points.append((arrival.at, float(arrival.count), default))
        elif isinstance(arrival, Recorded):
            more, dots = _recorded_pieces(arrival, load_recording(arrival.path), duration, default)
            pieces += more
            points += dots
    points.sort(key=lambda p: p[0])
    return RateCurve(
        tuple(pieces),
        np.asarray([p[0] for p in points], dtype=float),
        np.asarray([p[1] for p in points], dtype=float),
        np.asarray([p[2] for p in points], dtype=float),
    )
