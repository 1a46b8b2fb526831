"""The scenario file format (NB-1): a typed, validated description of a workload.

Why a closed pydantic model (``extra="forbid"``) rather than free YAML: a scenario is an
experiment's input, so a misspelt key must fail loudly, naming the field, instead of silently
running a different experiment. Every number of the simulated *service* stays in ``SimConfig``
(the ``config`` block is a partial ``SimConfig`` validated by it); this file only adds what the
*customers* do: who they are, when they arrive, how long they stay, what they say, and how their
clients retry.

Cross-references (an arrival naming an organization, a plan, a model) are checked against the
``SimConfig`` the scenario itself configures, so a plan added in ``config.billing.plans`` can be
used by an organization of the same file.
"""

from __future__ import annotations

import math
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from harness.scenarios.checks import Parts, cross_field_problems
from harness.scenarios.durations import Seconds
from harness.scenarios.lifting import Limits, lift
from harness.scenarios.parts import (
    Arrival,
    CapacityLoss,
    ClientBehaviour,
    Organization,
    PoolChange,
    RunMix,
    SessionProfile,
    Strict,
)
from sim.config import SimConfig

__all__ = ["Scenario"]


class Scenario(Strict):
    """A whole workload; ``load_scenario`` reads one from YAML."""

    name: str = "scenario"
    description: str = ""
    seed: int = 0
    duration: Seconds = Field(description="arrivals happen in [0, duration)")
    cooldown: Seconds = Field(default=0.0, description="simulated time after the last arrival")
    warmup: Seconds = Field(
        default=0.0, description="arrivals before this moment are left out of the metrics"
    )
    measure: Seconds | None = Field(
        default=None, description="length of the measurement window after the warm-up"
    )
    sample_every: Seconds = Field(default=60.0, description="utilization sampling interval")
    config: dict[str, Any] = Field(default_factory=dict, description="partial SimConfig")
    limits: Limits = Field(default_factory=Limits, description="service limits switched off")
    organizations: tuple[Organization, ...] = Field(min_length=1)
    arrivals: tuple[Arrival, ...] = ()
    sessions: SessionProfile = SessionProfile()
    client: ClientBehaviour = ClientBehaviour()
    runs: tuple[RunMix, ...] = ()
    faults: tuple[CapacityLoss, ...] = ()
    pool_schedule: tuple[PoolChange, ...] = Field(
        default=(),
        description="the pool's planned size over time (config.scheduler.workers before the "
        "first change)",
    )
    usage_timezones: tuple[str, ...] = ("UTC",)
    records: Literal["full", "sessions", "summary"] = Field(
        default="full",
        description="what a run keeps: every record, one row per session and request, or "
        "aggregates per interval only (bounded memory for months of any size)",
    )

    @field_validator("duration", "sample_every")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be > 0")
        return value

    @field_validator("usage_timezones")
    @classmethod
    def _timezones(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            try:
                ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown IANA timezone {name!r}") from None
        return value

    @field_validator("config")
    @classmethod
    def _config(cls, value: dict[str, Any]) -> dict[str, Any]:
        if "seed" in value:
            raise ValueError("set the seed at the top level (`seed:`), not in config")
        SimConfig.model_validate(value)  # the loader reports these errors with their paths
        return value

    @property
    def horizon(self) -> int:
        """Whole seconds beyond the end of the run: a limit lifted to it is never reached."""
        return math.ceil(self.duration + self.cooldown) + 1

    def window(self) -> tuple[float, float]:
        """The measurement window ``[start, end)`` of arrival times the metrics count."""
        end = self.duration if self.measure is None else self.warmup + self.measure
        return self.warmup, end

    def sim_config(self, seed: int | None = None) -> SimConfig:
        """The service configuration of this scenario, with ``seed`` (default: the file's) and
        every limit the scenario switches off lifted beyond reach."""
        config = SimConfig.model_validate(
            {**self.config, "seed": self.seed if seed is None else seed}
        )
        return lift(config, self.limits, self.horizon)

    def session_profile(self) -> SessionProfile:
        """What the clients ask for, with the idle timeout raised past the run when it is off."""
        if self.limits.idle_timeout == "off":
            return self.sessions.model_copy(update={"idle_timeout_seconds": self.horizon})
        return self.sessions

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        problems = cross_field_problems(Parts.of(self))
        if problems:
            raise ValueError("\n".join(str(problem) for problem in problems))
        return self
