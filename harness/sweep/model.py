"""The sweep file format (NB-3): a base scenario, a grid over dotted paths, replications.

Why dotted paths into the scenario's *data* (``config.scheduler.workers``,
``arrivals[0].rate_per_hour``) rather than a fixed list of knobs: any field of the scenario or
of ``SimConfig`` can be swept without new code, and every grid point is validated by the same
models as a hand-written scenario, so a bad value is refused, naming the point and the field,
before anything runs.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.runner.metrics import METRICS
from harness.scenarios.loader import (
    ScenarioError,
    parse_scenario,
    problems_of,
    read_yaml,
    resolve_paths,
)
from harness.scenarios.model import Scenario

__all__ = ["Point", "Sweep", "load_sweep", "parse_sweep", "replication_seed", "set_path"]

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_PATH = re.compile(r"[^.\[\]]+(?:\.[^.\[\]]+|\[\d+\])*")


def _parts(path: str) -> list[str | int]:
    """``a.b[0].c`` (or ``a.b.0.c``) as ``["a", "b", 0, "c"]``."""
    if not _PATH.fullmatch(path):
        raise ValueError(f"{path!r} is not a dotted path such as config.scheduler.workers")
    parts: list[str | int] = []
    for name, index in _TOKEN.findall(path):
        parts.append(int(index) if index else int(name) if name.isdigit() else name)
    return parts


def set_path(data: Any, path: str, value: Any) -> Any:
    """A deep copy of ``data`` with ``path`` (``a.b[0].c`` or ``a.b.0.c``) set to ``value``.

    Missing mappings on the way are created, so ``config.scheduler.workers`` works on a scenario
    without a ``config`` block; a list index must exist.
    """
    result = copy.deepcopy(data)
    parts = _parts(path)
    node = result
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        where = ".".join(str(p) for p in parts[: depth + 1])
        if isinstance(part, int):
            if not isinstance(node, list) or not 0 <= part < len(node):
                raise ValueError(f"{path}: no item {part} at {where}")
            if last:
                node[part] = value
            else:
                node = node[part]
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {where} is not a mapping")
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
    return result


def replication_seed(base_seed: int, replication: int) -> int:
    """The seed of a replication, derived from the sweep's seed (SHA-256, 31 bits).

    Every grid point uses the same seed for the same replication (common random numbers), so
    differences between points come from the parameters, not from luck.
    """
    digest = hashlib.sha256(f"{base_seed}:replication:{replication}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class Point(BaseModel):
    """One grid point: its index, the parameter values, and the scenario data they give."""

    model_config = ConfigDict(frozen=True)

    index: int
    params: dict[str, Any]
    scenario: dict[str, Any]


class Sweep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "sweep"
    description: str = ""
    base: str | None = Field(default=None, description="scenario file, relative to the sweep")
    scenario: dict[str, Any] | None = Field(default=None, description="inline base scenario")
    seed: int = 0
    replications: int = Field(default=3, ge=1)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    metrics: tuple[str, ...] = tuple(METRICS)

    @field_validator("grid")
    @classmethod
    def _grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for path, values in grid.items():
            _parts(path)
            if not values:
                raise ValueError(f"{path}: give at least one value")
        return grid

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, metrics: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [m for m in metrics if m not in METRICS]
        if unknown:
            raise ValueError(f"unknown metrics {', '.join(unknown)}; known: {', '.join(METRICS)}")
        return metrics

    def points(self, base: Mapping[str, Any]) -> list[Point]:
        """Every combination of the grid's values, in file order (the first path varies slowest)."""
        paths = list(self.grid)
        points = []
        for index, values in enumerate(itertools.product(*(self.grid[p] for p in paths))):
            data: Any = dict(base)
            for path, value in zip(paths, values, strict=True):
                data = set_path(data, path, value)
            points.append(
                Point(index=index, params=dict(zip(paths, values, strict=True)), scenario=data)
            )
        return points


def parse_sweep(
    data: object,
    source: str = "<sweep>",
    directory: Path | None = None,
    root: yaml.Node | None = None,
) -> tuple[Sweep, Scenario, list[Point]]:
    """The sweep, its base scenario and its validated points; ``ScenarioError`` names the field
    (and its line, given the file's YAML node tree ``root``)."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, ["the file must hold a mapping of sweep fields"])
    try:
        sweep = Sweep.model_validate(dict(data))
    except ValidationError as error:
        raise ScenarioError(source, problems_of(error), root) from None
    if (sweep.base is None) == (sweep.scenario is None):
        raise ScenarioError(source, ["give exactly one of `base` (a file) or `scenario` (inline)"])
    if sweep.base is not None:
        path = Path(sweep.base)
        if not path.is_absolute() and directory is not None:
            path = directory / path
        document = read_yaml(path)
        base_data, base_source, base_root = document.data, document.source, document.root
        base_data = resolve_paths(base_data, path.parent)
    else:
        base_data, base_source, base_root = sweep.scenario, f"{source}: scenario", None
        if directory is not None:
            base_data = resolve_paths(base_data, directory)
    base = parse_scenario(base_data, base_source, base_root)
    assert isinstance(base_data, Mapping)
    points: list[Point] = []
    try:
        raw_points = sweep.points(base_data)
    except ValueError as error:
        raise ScenarioError(source, [f"grid.{error}"]) from None
    for point in raw_points:
        label = ", ".join(f"{k}={v!r}" for k, v in point.params.items())
        parse_scenario(point.scenario, f"{source}: grid point {point.index} ({label})")
        points.append(point)
    return sweep, base, points


def load_sweep(path: str | Path) -> tuple[Sweep, Scenario, list[Point]]:
    """Read a sweep YAML file; a relative ``base`` is read next to it."""
    document = read_yaml(path)
    return parse_sweep(document.data, document.source, Path(path).parent, document.root)
