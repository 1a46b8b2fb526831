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
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.runner.metrics import METRICS, resolve_metric
from harness.scenarios.loader import (
    ScenarioError,
    parse_scenario,
    problems_of,
    read_scenario,
    read_yaml,
    resolve_paths,
)
from harness.scenarios.model import Scenario
from harness.scenarios.problems import Problem

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
        """Known metrics; an old name is read as its new one for a release, with a warning."""
        resolved, problems = [], []
        for name in metrics:
            try:
                new, note = resolve_metric(name)
            except ValueError as error:
                problems.append(str(error))
                continue
            if note is not None:
                warnings.warn(f"sweep metrics: {note}", FutureWarning, stacklevel=2)
            resolved.append(new)
        if problems:
            raise ValueError("\n".join(problems))
        return tuple(resolved)

    def points(self, base: Mapping[str, Any]) -> list[Point]:
        """Every combination of the grid's values, in file order (the first path varies slowest)."""
        return _points(self.grid, base)


def _points(grid: Mapping[str, list[Any]], base: Mapping[str, Any]) -> list[Point]:
    paths = list(grid)
    points = []
    for index, values in enumerate(itertools.product(*(grid[p] for p in paths))):
        data: Any = dict(base)
        for path, value in zip(paths, values, strict=True):
            data = set_path(data, path, value)
        points.append(
            Point(index=index, params=dict(zip(paths, values, strict=True)), scenario=data)
        )
    return points


def _valid_grid(data: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The grid entries that are well formed (the others are reported by ``Sweep``)."""
    grid = data.get("grid", {})
    if not isinstance(grid, Mapping):
        return {}
    valid = {}
    for path, values in grid.items():
        if isinstance(path, str) and _PATH.fullmatch(path) and isinstance(values, list) and values:
            valid[path] = values
    return valid


def _grid_path_of(problem_path: str, grid: Mapping[str, list[Any]]) -> str | None:
    """The grid path a point's problem comes from (the longest that prefixes it), if any."""

    def dotted(path: str) -> str:
        return path.replace("[", ".").replace("]", "")

    normal = dotted(problem_path)
    causes = [p for p in grid if normal == dotted(p) or normal.startswith(dotted(p) + ".")]
    return max(causes, key=lambda p: len(dotted(p))) if causes else None


def _point_problems(
    points: list[Point], grid: Mapping[str, list[Any]], source: str
) -> list[Problem]:
    """Every grid point's problems, each once: at the grid path that caused it, naming the
    values that have it (or, for a problem no one path explains, at the grid, naming the
    points)."""
    found: dict[tuple[str | None, str], list[Point]] = {}
    for point in points:
        try:
            parse_scenario(point.scenario, f"{source}: grid point {point.index}")
        except ScenarioError as error:
            for text in error.problems:
                path = text.split(": ", 1)[0] if ": " in text else ""
                found.setdefault((_grid_path_of(path, grid), text), []).append(point)
    problems = []
    for (cause, text), having in found.items():
        if cause is not None:
            values = list(dict.fromkeys(repr(p.params[cause]) for p in having))
            said = f"value{'s' if len(values) > 1 else ''} {', '.join(values)}"
            problems.append(Problem(("grid", cause), f"{said}: {text}"))
        else:
            indexes = ", ".join(str(p.index) for p in having[:5])
            more = f" and {len(having) - 5} more" if len(having) > 5 else ""
            problems.append(Problem(("grid",), f"grid points {indexes}{more}: {text}"))
    return problems


def parse_sweep(
    data: object,
    source: str = "<sweep>",
    directory: Path | None = None,
    root: yaml.Node | None = None,
) -> tuple[Sweep, Scenario, list[Point]]:
    """The sweep, its base scenario and its validated points.

    A bad file is refused in one round: ``ScenarioError`` lists the sweep's own problems, the
    base scenario's (from its file, with its lines) and every grid point's (once per problem,
    at the line of the grid path that caused it), each with its file and line."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, ["the file must hold a mapping of sweep fields"])
    problems: list[str | Problem] = []
    elsewhere: list[tuple[str, int | None, str]] = []
    sweep: Sweep | None = None
    try:
        sweep = Sweep.model_validate(dict(data))
    except ValidationError as error:
        problems += problems_of(error)
    base_name, inline = data.get("base"), data.get("scenario")
    base: Scenario | None = None
    base_data: Any = None
    if (base_name is None) == (inline is None):
        problems.append("give exactly one of `base` (a file) or `scenario` (inline)")
    elif isinstance(base_name, str) or isinstance(inline, Mapping):
        try:
            if isinstance(base_name, str):
                path = Path(base_name)
                if not path.is_absolute() and directory is not None:
                    path = directory / path
                document = read_scenario(path)  # an overlay too
                base_data, base_source, base_root = document.data, document.source, document.root
            else:
                base_data, base_source, base_root = inline, f"{source}: scenario", None
                if directory is not None:
                    base_data = resolve_paths(base_data, directory)
            base = parse_scenario(base_data, base_source, base_root)
        except ScenarioError as error:
            if isinstance(base_name, str):
                elsewhere += error.located
            else:
                problems += [Problem(("scenario",), text) for text in error.problems]
    points: list[Point] = []
    if base is not None:
        grid = _valid_grid(data)
        try:
            points = _points(grid, base_data)
        except ValueError as error:
            problems.append(f"grid.{error}")
        else:
            problems += _point_problems(points, grid, source)
    if problems or elsewhere:
        raise ScenarioError(source, problems, root, elsewhere=elsewhere)
    assert sweep is not None and base is not None
    return sweep, base, points


def load_sweep(path: str | Path) -> tuple[Sweep, Scenario, list[Point]]:
    """Read a sweep YAML file; a relative ``base`` is read next to it."""
    document = read_yaml(path)
    return parse_sweep(document.data, document.source, Path(path).parent, document.root)
