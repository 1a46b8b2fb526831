"""Service-level objectives a plan must meet: ``METRIC<=TARGET`` or ``METRIC>=TARGET``.

Why only some metrics: a plan looks for the fewest workers, so an objective has to be one that
adding workers moves towards being met (``Metric.workers`` in ``harness.runner.metrics``):
``<=`` on a metric that falls as workers are added (waits, ``no_capacity_rate``, utilization),
``>=`` on one that rises. A count (``no_capacity``, ``waited_sessions``) grows with the traffic,
so a target on it means something else every hour: its rate is the objective to set. Refusals
by caps, the rate limit or credits do not depend on the pool at all, so no pool size can meet
a target on them. Old metric names are read with a note (``resolve_metric``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from harness.runner.metrics import METRICS, resolve_metric

__all__ = ["SLO_METRICS", "Slo", "SloError", "parse_slo", "parse_slos"]

_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|>=)\s*([^\s]+)\s*$")


class SloError(ValueError):
    """An objective that cannot be read or that no pool size can be planned for."""


def _direction_of(metric: str) -> str | None:
    spec = METRICS[metric]
    if spec.kind in ("count", "credits") or spec.workers == "none":
        return None
    return "<=" if spec.workers == "down" else ">="


#: Metric → the one comparison a plan can meet by adding workers.
SLO_METRICS: dict[str, str] = {
    name: op for name in METRICS if (op := _direction_of(name)) is not None
}


@dataclass(frozen=True, slots=True)
class Slo:
    """One objective: ``metric`` (its current name) ``op`` ``target``; ``note`` says when the
    text used an old name."""

    metric: str
    op: str
    target: float
    note: str | None = None

    @property
    def text(self) -> str:
        return f"{self.metric}{self.op}{self.target:g}"

    def unfavourable(self, low: float, high: float) -> float:
        """The end of an interval ``[low, high]`` that is worse for this objective."""
        return high if self.op == "<=" else low

    def holds(self, value: float) -> bool:
        """Whether ``value`` meets the objective (an undefined value, e.g. a rate over no
        sessions at all, has nothing to miss)."""
        if math.isnan(value):
            return True
        return value <= self.target if self.op == "<=" else value >= self.target


def parse_slo(text: str) -> Slo:
    """``Slo`` of ``text`` such as ``"no_capacity_rate<=0.01"``; ``SloError`` naming what is
    wrong: the syntax, an unknown metric (with the closest names), a metric no pool size can
    plan for, the wrong comparison for it, or a target out of its range."""
    match = _PATTERN.match(text)
    if match is None:
        raise SloError(
            f"cannot read the objective {text!r}: write METRIC<=TARGET or METRIC>=TARGET, "
            "e.g. no_capacity_rate<=0.01"
        )
    name, op, raw = match.groups()
    try:
        metric, note = resolve_metric(name)
    except ValueError as error:
        raise SloError(f"objective {text!r}: {error}") from None
    if metric not in SLO_METRICS:
        spec = METRICS[metric]
        why = (
            "it is a count, which grows with the traffic; set a target on its rate instead"
            if spec.kind in ("count", "credits")
            else "it does not depend on the pool's size"
        )
        raise SloError(
            f"objective {text!r}: a plan cannot size the pool for {metric} ({why}); "
            f"objectives can be set on: {', '.join(sorted(SLO_METRICS))}"
        )
    wanted = SLO_METRICS[metric]
    if op != wanted:
        moves = "falls" if wanted == "<=" else "rises"
        raise SloError(
            f"objective {text!r}: {metric} {moves} as workers are added, so only "
            f"{metric}{wanted}TARGET can be met by adding them"
        )
    try:
        target = float(raw)
    except ValueError:
        raise SloError(f"objective {text!r}: the target {raw!r} is not a number") from None
    low, high = METRICS[metric].bounds
    if not math.isfinite(target) or not low <= target <= high:
        unit = f" {METRICS[metric].unit}" if METRICS[metric].unit else ""
        raise SloError(f"objective {text!r}: the target must lie within [{low:g}, {high:g}]{unit}")
    return Slo(metric, op, target, note)


def parse_slos(texts: list[str] | tuple[str, ...]) -> tuple[Slo, ...]:
    """Every objective of ``texts`` (at least one; each metric once); ``SloError`` listing
    every problem at once."""
    if not texts:
        raise SloError("give at least one objective, e.g. --slo 'no_capacity_rate<=0.01'")
    problems: list[str] = []
    slos: list[Slo] = []
    for text in texts:
        try:
            slo = parse_slo(text)
        except SloError as error:
            problems.append(str(error))
            continue
        if any(other.metric == slo.metric for other in slos):
            problems.append(f"objective {text!r}: {slo.metric} has an objective already")
            continue
        slos.append(slo)
    if problems:
        raise SloError("\n".join(problems))
    return tuple(slos)
