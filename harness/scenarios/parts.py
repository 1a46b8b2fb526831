"""The parts of a scenario file (NB-1): who the customers are, when they arrive, how long they
stay, what they say and how their clients retry.

Why apart from ``Scenario`` (``harness.scenarios.model``): the cross-field checks
(``harness.scenarios.checks``) validate each part on its own, and the scenario's own validator
runs those checks; with the parts here, the model imports the checks and the checks import the
parts, and nothing imports back.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.scenarios.durations import Seconds
from sim.config import BILLING_SURFACES, QUALITIES, LimitsConfig
from sim.distributions import Distribution, Exponential

__all__ = [
    "RUN_MODELS",
    "Arrival",
    "AudioPattern",
    "Burst",
    "CapacityLoss",
    "ClientBehaviour",
    "Diurnal",
    "Organization",
    "Poisson",
    "PoolChange",
    "Recorded",
    "RunMix",
    "SessionProfile",
    "Strict",
    "max_duration",
]


#: Models a scenario can drive: those whose input is plain text the runner can generate.
RUN_MODELS: dict[str, str] = {"sim/echo-text": "prompt", "sim/speech": "text"}


class Strict(BaseModel):
    # NaN or an infinity in an experiment's input is a mistake, never a value to run with.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Organization(Strict):
    """One customer: its plan, how many API keys its clients spread over, its share of traffic."""

    name: str = Field(min_length=1)
    plan: str = "free"
    keys: int = Field(default=1, ge=1, le=100, description="unrestricted keys used round-robin")
    concurrency: int | None = Field(
        default=None, ge=1, description="support's per-organization concurrency override"
    )
    weight: float = Field(default=1.0, gt=0, description="share of the global arrivals")


class _ArrivalBase(Strict):
    organization: str | None = Field(
        default=None, description="the organization these arrivals belong to; None: all, by weight"
    )


class Poisson(_ArrivalBase):
    """Arrivals at a constant rate, memoryless, between ``start`` and ``end``.

    A rate estimated from recorded days (``avatar-sim calibrate`` writes them so) says from how
    many (``estimated_from_days``): each run then draws its rate from the rate's posterior given
    the count those days held (Gamma(N + 1/2, T), Jeffreys' prior, ``harness.traffic.fit``), so
    that runs vary as tomorrow may, not only by Poisson noise around a rate taken as known."""

    kind: Literal["poisson"] = "poisson"
    rate_per_hour: float = Field(gt=0)
    start: Seconds = 0.0
    end: Seconds | None = None
    estimated_from_days: int | None = Field(
        default=None, ge=1, description="the rate is an estimate from this many recorded days"
    )


class Diurnal(_ArrivalBase):
    """Poisson arrivals whose rate follows the hour of the (UTC) day: ``base * profile[hour]``."""

    kind: Literal["diurnal"] = "diurnal"
    base_rate_per_hour: float = Field(ge=0)
    profile: tuple[float, ...] = Field(min_length=24, max_length=24)

    @field_validator("profile")
    @classmethod
    def _non_negative(cls, profile: tuple[float, ...]) -> tuple[float, ...]:
        if any(v < 0 for v in profile):
            raise ValueError("hourly factors must be >= 0")
        return profile


class Burst(_ArrivalBase):
    """``count`` arrivals spread uniformly over ``within`` seconds from ``at`` (a flash crowd)."""

    kind: Literal["burst"] = "burst"
    at: Seconds
    count: int = Field(ge=1)
    within: Seconds = 0.0


class Recorded(_ArrivalBase):
    """The sessions of a recording (``harness.traffic.recording``: a capture, a CSV or Parquet
    file, or a run's ``tables/sessions.parquet``), each at its recorded offset with its recorded
    length, quality and surface.

    The file is read and checked with the scenario (its problems are reported at ``path``); a
    relative ``path`` is read next to the scenario file. Offsets count from ``since`` (default:
    the recording's start); time runs ``speed`` times faster (offsets and lengths divided by
    it); the whole plays ``shift`` seconds into the run; only sessions that then fall within
    ``[0, duration)`` arrive. ``scale`` multiplies the traffic: below 1 each session is kept
    with that probability, above 1 whole copies are added (the last one thinned to the
    fraction), each shifted by a random offset within the recording's mean gap between
    sessions, so that copies do not arrive in lockstep; the draws are the run's seed's.

    ``demand`` plays a fresh day each run instead of the recording (NB-15,
    ``harness.traffic.fresh``): ``fitted`` (rates fitted per ``step`` of the ``period`` and
    drawn from their uncertainty, Poisson arrivals) or ``bootstrap`` (each step from a recorded
    day drawn at random); unset, a run replays the recording and a plan draws fitted days.

    A session's organization is the arrival's ``organization`` when given, else its recorded
    label, which must then name one of the scenario's organizations (a session without one is
    drawn by weight, like any arrival). A session without a recorded length (it never ran)
    draws one from ``sessions.length``.
    """

    kind: Literal["recorded"] = "recorded"
    path: str = Field(min_length=1, description="the recording: CSV or Parquet")
    demand: Literal["exact", "fitted", "bootstrap"] | None = Field(
        default=None,
        description="exact: the recording as recorded; fitted, bootstrap: a fresh day each run "
        "(harness.traffic.fresh); unset: exact in a run, fitted in a plan",
    )
    period: Seconds = Field(default=86_400.0, gt=0, description="a fresh day's length")
    step: Seconds | None = Field(
        default=None, gt=0, description="a fresh day's step (default: 1h, a plan's own step)"
    )
    since: AwareDatetime | None = Field(
        default=None, description="the recorded instant played at the shift; earlier: left out"
    )
    speed: float = Field(default=1.0, gt=0, le=1e6, description="time runs this much faster")
    shift: Seconds = Field(default=0.0, description="when the recording starts in the run")
    scale: float = Field(default=1.0, gt=0, le=1000, description="traffic multiplier")


Arrival = Annotated[Poisson | Diurnal | Burst | Recorded, Field(discriminator="kind")]


class AudioPattern(Strict):
    """Talk-spurts: speech and silence alternate, each drawn from its distribution."""

    speech: Distribution = Exponential(mean_value=4.0)
    silence: Distribution = Exponential(mean_value=2.0)

    @model_validator(mode="after")
    def _progresses(self) -> AudioPattern:
        if self.speech.mean + self.silence.mean <= 0:
            raise ValueError("speech and silence cannot both have a mean of 0")
        return self


def _weights(value: dict[str, float], allowed: tuple[str, ...], what: str) -> dict[str, float]:
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"unknown {what} {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    if any(w < 0 for w in value.values()) or sum(value.values()) <= 0:
        raise ValueError("weights must be >= 0 with a positive sum")
    return value


class SessionProfile(Strict):
    """What each arriving client asks for and how long it keeps the session."""

    avatar_id: str = "av_stock_aria"
    length: Distribution = Field(
        default=Exponential(mean_value=300.0),
        description="seconds the client keeps a running session before ending it",
    )
    audio: AudioPattern | None = Field(
        default_factory=AudioPattern,
        description="talk-spurts; null: the client sends nothing and the idle timeout ends it",
    )
    audio_source: Literal["track", "data_stream"] = "track"
    idle_timeout_seconds: int | None = Field(default=None, ge=1)
    max_duration_seconds: int | None = Field(
        default=None,
        ge=1,
        description="what the client asks for; None: enough for its planned length",
    )
    quality: dict[str, float] = Field(default_factory=lambda: {"standard": 1.0})
    surface: dict[str, float] = Field(default_factory=lambda: {"api": 1.0})

    @field_validator("quality")
    @classmethod
    def _quality(cls, value: dict[str, float]) -> dict[str, float]:
        return _weights(value, QUALITIES, "quality")

    @field_validator("surface")
    @classmethod
    def _surface(cls, value: dict[str, float]) -> dict[str, float]:
        return _weights(value, BILLING_SURFACES, "billing surface")

    def max_duration_for(self, length: float, limits: LimitsConfig) -> int:
        """The ``max_duration_seconds`` a client planning ``length`` seconds asks for
        (``max_duration``, with this profile's value and ``limits``' range)."""
        return max_duration(
            length,
            self.max_duration_seconds,
            limits.max_duration_min_seconds,
            limits.max_duration_ceiling_seconds,
        )


def max_duration(length: float, named: int | None, low: int, high: int) -> int:
    """The ``max_duration_seconds`` a client planning ``length`` seconds asks for.

    Unless the scenario names a value (``named``), a client asks for its planned length rounded
    up, plus a second so that its own hang-up comes first, within the range ``[low, high]`` the
    service accepts: a session is then truncated only by its plan's clamp, never by the default
    maximum duration the client forgot to raise. Plain values, not the profile and the limits, so
    that a client binds them once.
    """
    if named is not None:
        return named
    return min(max(math.ceil(length) + 1, low), high)


class ClientBehaviour(Strict):
    """How clients retry refused creates: exponential backoff, Retry-After, idempotency keys."""

    max_attempts: int = Field(default=1, ge=1, description="1: never retry")
    base_delay: Seconds = 1.0
    multiplier: float = Field(default=2.0, ge=1)
    max_delay: Seconds = 60.0
    jitter: float = Field(default=0.0, ge=0, le=1, description="± fraction of each delay")
    honour_retry_after: bool = True
    idempotency_keys: bool = True
    retry_on: tuple[str, ...] = Field(
        default=("rate_limit", "at_capacity", "concurrent_sessions"),
        description="error codes or error types that are retried",
    )


class CapacityLoss(Strict):
    """The worker pool shrinks to ``workers`` at ``at`` and, at ``until`` (if given), returns to
    its configured size: an outage of part (or all) of the fleet. Busy workers finish their
    session first; queued jobs wait, then fail ``no_capacity``."""

    kind: Literal["capacity"] = "capacity"
    at: Seconds
    workers: int = Field(ge=0)
    until: Seconds | None = None


class PoolChange(Strict):
    """From ``at`` on, the pool is meant to have ``workers`` workers (a planned size, such as
    ``avatar-sim plan`` writes): workers added join ``config.scheduler.provision_lead_seconds``
    later (at once by default), shrinking removes idle ones and lets busy ones finish their
    session first. A capacity fault overrides it while it lasts."""

    at: Seconds
    workers: int = Field(ge=0)


class RunMix(Strict):
    """Model runs created at a Poisson rate, with a prompt of ``characters`` characters."""

    model: str
    rate_per_hour: float = Field(gt=0)
    organization: str | None = None
    characters: int = Field(default=200, ge=1, le=5_000)

    @field_validator("model")
    @classmethod
    def _known(cls, model: str) -> str:
        if model not in RUN_MODELS:
            raise ValueError(f"unsupported model {model!r}; allowed: {', '.join(RUN_MODELS)}")
        return model
