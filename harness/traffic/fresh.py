"""Fresh days of demand drawn from a recording (NB-15): what a plan's replications play instead of
the one day recorded, unless it is asked to replay it exactly.

Two ways, both over the recording folded on its ``period`` (a day), in steps (an hour):

- ``fitted``: each step's rate, and any block within it the arrivals show beyond noise, fitted
  to the recorded days (``harness.traffic.fit``); a fresh day draws each block's rate from its
  posterior given the recorded count, then Poisson arrivals at it. Each arrival is a recorded
  session drawn at random (with replacement) from the whole recording: its length, quality,
  surface and organization go together.
- ``bootstrap``: each step of a fresh day is that step of a recorded day drawn at random, its
  sessions as recorded (a block bootstrap across days, blocks being a step of one day, so the
  traffic within a step keeps its recorded shape: H. R. Kunsch, "The jackknife and the bootstrap
  for general stationary observations", Ann. Statist. 17 (1989) 1217-1241, with the day's
  position as the block's index). With one recorded day there is nothing to draw from: it
  replays the day.

A fresh recording spans as many periods as the one it comes from, so what plays it (``since``,
``speed``, ``shift``, ``scale``) treats it as the recording. The same random stream gives the
same day.
"""

from __future__ import annotations

import math
import random
from typing import Literal

import numpy as np
import pandas as pd

from harness.traffic.fit import BIN_SECONDS, DAY, RateProfile, fit_rate_profile
from harness.traffic.recording import Recording

__all__ = ["DEMANDS", "Demand", "fitted_profile", "fresh_recording", "observed_seconds"]

Demand = Literal["exact", "fitted", "bootstrap"]
#: How a recorded arrival's demand plays: the recording itself, or a fresh day each run.
DEMANDS: dict[str, str] = {
    "exact": "the recorded day replayed as recorded",
    "fitted": "a fresh day each run: Poisson arrivals at rates drawn from their posterior given "
    "the recorded counts (per step, and per block of a step where the arrivals show one), each "
    "a recorded session drawn at random",
    "bootstrap": "a fresh day each run: each step that step of a recorded day drawn at random "
    "(a block bootstrap across the recorded days)",
}
_COLUMNS = ("offset_seconds", "length_seconds", "organization", "quality", "surface")
#: Profiles fitted in this process: (recording, period, step) → profile. A recording is played
#: by many runs of a plan; the recording itself is kept so its identity cannot be reused.
_FITTED: dict[tuple[int, float, float], tuple[Recording, RateProfile]] = {}
_FITTED_MAX = 8


def observed_seconds(recording: Recording) -> float:
    """How long the recording watched: to the capture's ``until`` when it says, else to the end
    of the minute (``BIN_SECONDS``) of its last session's creation."""
    last = math.floor(recording.span / BIN_SECONDS) * BIN_SECONDS + BIN_SECONDS
    until = recording.info.get("until")
    if until and recording.start is not None:
        watched = (pd.Timestamp(until) - recording.start).total_seconds()
        return watched if watched > recording.span else last
    return last


def fitted_profile(recording: Recording, period: float = DAY, step: float = 3600.0) -> RateProfile:
    """The rate profile of ``recording``'s arrivals (``fit_rate_profile``), fitted once per
    process for each recording, period and step."""
    key = (id(recording), period, step)
    found = _FITTED.get(key)
    if found is not None and found[0] is recording:
        return found[1]
    profile = fit_rate_profile(
        recording.frame["offset_seconds"].to_numpy(dtype=float),
        observed_seconds(recording),
        period,
        step,
    )
    if len(_FITTED) >= _FITTED_MAX:
        del _FITTED[next(iter(_FITTED))]
    _FITTED[key] = (recording, profile)
    return profile


def _rows(recording: Recording) -> pd.DataFrame:
    return recording.frame[list(_COLUMNS)].reset_index(drop=True)


def _fitted_day(
    recording: Recording, period: float, step: float, rng: random.Random
) -> pd.DataFrame:
    profile = fitted_profile(recording, period, step)
    rows = _rows(recording)
    instants: list[float] = []
    for day in range(profile.days):
        instants += profile.instants(rng, day * period)
    if not len(rows):
        return rows
    picks = [rng.randrange(len(rows)) for _ in instants]
    fresh = rows.iloc[picks].reset_index(drop=True)
    fresh["offset_seconds"] = np.asarray(instants, dtype=float)
    return fresh


def _bootstrap_day(
    recording: Recording, period: float, step: float, rng: random.Random
) -> pd.DataFrame:
    rows = _rows(recording)
    observed = observed_seconds(recording)
    days = max(1, math.ceil(observed / period - 1e-9))
    length = min(period, observed)
    offsets = rows["offset_seconds"].to_numpy(dtype=float)
    parts = []
    for day in range(days):
        start = 0.0
        while start < length:
            covering = [d for d in range(days) if d * period + start < observed] or [0]
            drawn = covering[rng.randrange(len(covering))]
            low, high = drawn * period + start, drawn * period + min(start + step, length)
            inside = rows[(offsets >= low) & (offsets < high)].copy()
            inside["offset_seconds"] = inside["offset_seconds"] - drawn * period + day * period
            parts.append(inside)
            start += step
    return pd.concat(parts, ignore_index=True) if parts else rows.iloc[:0]


def fresh_recording(
    recording: Recording,
    demand: Demand,
    rng: random.Random,
    period: float = DAY,
    step: float = 3600.0,
) -> Recording:
    """``recording`` itself (``exact``), or a fresh day of it drawn from ``rng`` (see the
    module), sorted by offset, as a recording with the same start and information."""
    if demand == "exact":
        return recording
    draw = _fitted_day if demand == "fitted" else _bootstrap_day
    fresh = draw(recording, period, step, rng).sort_values("offset_seconds", kind="stable")
    frame = pd.DataFrame(
        {name: fresh[name].to_numpy() for name in _COLUMNS}, columns=list(_COLUMNS)
    )
    frame["quality"] = pd.Categorical(
        frame["quality"], categories=recording.frame["quality"].cat.categories
    )
    frame["surface"] = pd.Categorical(
        frame["surface"], categories=recording.frame["surface"].cat.categories
    )
    return Recording(frame, recording.source, recording.start, dict(recording.info))
