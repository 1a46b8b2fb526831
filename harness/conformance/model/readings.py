"""The seed's open points as parameters of the model: learned from the target's first answer
and then held.

Why held: the seed lets a deployment choose (403 or 404 for another organization's resource, a
page size clamped or refused, a plan's clamp of ``max_duration_seconds``), but it is one
deployment with one behaviour. Once a point is learned, an answer that reads it another way is a
contradiction the target made itself: it fails, naming both answers. A point is learned per
place it applies to (``where``: an operation, a list), since a deployment may answer each
operation its own way.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.target import Exchange

__all__ = ["Learned", "Readings"]


@dataclass(frozen=True, slots=True)
class Learned:
    """A point's value and the exchange it was learned from."""

    value: Any
    exchange: Exchange | None


@dataclass
class Readings:
    """Every open point learned so far."""

    points: dict[tuple[str, Hashable], Learned] = field(default_factory=dict)

    def get(self, point: str, where: Hashable = None) -> Any:
        learned = self.points.get((point, where))
        return None if learned is None else learned.value

    def hold(
        self, point: str, value: Any, exchange: Exchange | None, where: Hashable = None
    ) -> str | None:
        """Learn ``point`` (at ``where``) as ``value``, or, once learned, the contradiction
        when ``value`` differs (``None`` when it agrees)."""
        learned = self.points.get((point, where))
        if learned is None:
            self.points[(point, where)] = Learned(value, exchange)
            return None
        if learned.value == value:
            return None
        first = (
            f" ({learned.exchange.method} {learned.exchange.path})"
            if learned.exchange is not None
            else ""
        )
        return (
            f"the target read the open point '{point}' as {learned.value!r} first{first}, and "
            f"now as {value!r}: one deployment answers one way"
        )

    def summary(self) -> dict[str, Any]:
        """The learned points, for the report (``point`` or ``point @ where``)."""
        return {
            (point if where is None else f"{point} @ {where}"): learned.value
            for (point, where), learned in self.points.items()
        }
