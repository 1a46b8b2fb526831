"""The distributions a configuration field may hold: data, sampled by ``sim.rng`` with an
injected random stream, each knowing its mean (the Erlang baselines and the plans read it)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Constant", "Distribution", "Exponential", "FrozenData", "LogNormal", "Uniform"]


class FrozenData(BaseModel):
    """Configuration data: immutable, and an unknown field is an error naming it."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


class Constant(FrozenData):
    """Always the same value (seconds, or whatever unit the field names)."""

    kind: Literal["constant"] = "constant"
    value: float = Field(ge=0)

    @property
    def mean(self) -> float:
        return self.value


class Exponential(FrozenData):
    """Memoryless durations, e.g. Poisson inter-arrival times."""

    kind: Literal["exponential"] = "exponential"
    mean_value: float = Field(gt=0, alias="mean")

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @property
    def mean(self) -> float:
        return self.mean_value


class LogNormal(FrozenData):
    """Right-skewed latencies given by their median and the sigma of the underlying normal."""

    kind: Literal["lognormal"] = "lognormal"
    median: float = Field(gt=0)
    sigma: float = Field(ge=0)
    cap: float | None = Field(default=None, gt=0, description="optional upper bound")

    @property
    def mean(self) -> float:
        """E[min(X, cap)] of the lognormal X (the plain lognormal mean without a cap)."""
        full = self.median * math.exp(self.sigma**2 / 2)
        if self.cap is None:
            return full
        if self.sigma == 0:
            return min(self.median, self.cap)
        edge = math.log(self.cap / self.median) / self.sigma
        below = full * _normal_cdf(edge - self.sigma)
        return below + self.cap * (1.0 - _normal_cdf(edge))


class Uniform(FrozenData):
    kind: Literal["uniform"] = "uniform"
    low: float = Field(ge=0)
    high: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError("high must be >= low")
        return self

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2


Distribution = Annotated[Constant | Exponential | LogNormal | Uniform, Field(discriminator="kind")]
