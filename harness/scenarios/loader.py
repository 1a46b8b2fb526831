"""Reading scenario files: every problem of a file at once, naming the field and the line (NB-1).

Why a formatter of our own: pydantic's default message spreads one problem over three lines and
spells locations as ``organizations.1.plan``; a scenario author wants one line per problem that
points at the YAML key, ``organizations[1].plan: unknown plan 'gold'``, and the line of the file
(``yaml.compose`` keeps every node's position). Why one round: fixing a file one error per run
is slow, so the loader gathers pydantic's field problems, the ``config`` block's problems (under
``config.``) and the cross-field checks of ``harness.scenarios.checks`` on whatever parts did
validate, and reports them together.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.scenarios.checks import Parts, cross_field_problems
from harness.scenarios.model import Scenario
from harness.scenarios.overlay import EXTENDS, merge
from harness.scenarios.problems import Problem, line_of
from sim.config import SimConfig

__all__ = [
    "ScenarioError",
    "YamlDocument",
    "format_errors",
    "load_scenario",
    "load_yaml",
    "parse_scenario",
    "problems_of",
    "read_scenario",
    "read_yaml",
    "resolve_paths",
]


class ScenarioError(ValueError):
    """A scenario or sweep file that cannot be used.

    ``problems`` lists one ``path: message`` line per problem and ``lines`` the line of each in
    the file (``None`` where unknown); the message shows ``file:line: path: message``. A sweep
    also reports the problems of the scenario file it names (``elsewhere``: each with its own
    file and line), so that one round shows every problem of both.
    """

    def __init__(
        self,
        source: str,
        problems: Sequence[str | Problem],
        root: yaml.Node | None = None,
        *,
        elsewhere: Sequence[tuple[str, int | None, str]] = (),
    ) -> None:
        self.source = source
        located = [
            (source, line_of(root, p.loc) if p.loc else None, str(p))
            for p in (p if isinstance(p, Problem) else Problem((), p) for p in problems)
        ]
        located += list(elsewhere)
        # By file (this one first), then in file order when the lines are known.
        files = {source: 0}
        for where, _line, _text in located:
            files.setdefault(where, len(files))
        located.sort(key=lambda item: (files[item[0]], math.inf if item[1] is None else item[1]))
        self.located = tuple(located)
        self.problems = tuple(text for _where, _line, text in located)
        self.lines = tuple(line for _where, line, _text in located)
        count = len(self.problems)
        header = f"{source}: invalid ({count} problem{'s' if count != 1 else ''})"
        body = [
            f"  {where}:{line}: {text}" if line is not None else f"  {where}: {text}"
            for where, line, text in located
        ]
        super().__init__("\n".join([header, *body]))


def problems_of(error: ValidationError, prefix: tuple[str | int, ...] = ()) -> list[Problem]:
    """One ``Problem`` per line of a pydantic error, located under ``prefix``."""
    found: list[Problem] = []
    for item in error.errors(include_url=False):
        message = str(item["msg"]).removeprefix("Value error, ")
        loc = (*prefix, *item["loc"])
        found += [Problem(loc, line) for line in message.splitlines()]
    return found


def format_errors(error: ValidationError, prefix: str = "") -> list[str]:
    """One ``path: message`` line per problem of a pydantic error."""
    lines = []
    for problem in problems_of(error):
        path = problem.path
        full = f"{prefix}.{path}" if prefix and path else (prefix or path)
        lines.append(f"{full}: {problem.message}" if full else problem.message)
    return lines


def _config_problems(data: Mapping[str, Any]) -> list[Problem]:
    config = data.get("config")
    if not isinstance(config, Mapping) or "seed" in config:
        return []
    try:
        SimConfig.model_validate(dict(config))
    except ValidationError as error:
        return problems_of(error, ("config",))
    return []


def _all_problems(data: Mapping[str, Any], error: ValidationError) -> list[Problem]:
    """Field problems, config problems and cross-field problems, one per place and message."""
    config = _config_problems(data)
    found: list[Problem] = []
    for problem in problems_of(error):
        if problem.loc == ():
            continue  # the model's cross-field check: recomputed below on the valid parts
        if problem.loc[0] == "config" and config:
            continue  # SimConfig's own problems, with their full paths, replace these
        found.append(problem)
    found += config
    seen = {p.path for p in found}
    found += [p for p in cross_field_problems(Parts.of_data(data)) if p.path not in seen]
    return found


def parse_scenario(
    data: object, source: str = "<scenario>", root: yaml.Node | None = None
) -> Scenario:
    """A ``Scenario`` from already-parsed YAML/JSON data, or ``ScenarioError`` listing every
    problem (with its line when ``root``, the file's YAML node tree, is given)."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, ["the file must hold a mapping of scenario fields"])
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as error:
        raise ScenarioError(source, _all_problems(data, error), root) from None


class YamlDocument:
    """A parsed YAML file: its data and its node tree (for line numbers); an overlay's also
    lists every file of its chain (``layers``: source, node tree and own data, the overlay
    first), so a problem is told at the line of the file that wrote the field."""

    def __init__(
        self,
        source: str,
        data: Any,
        root: yaml.Node | None,
        layers: tuple[tuple[str, yaml.Node | None, Any], ...] = (),
    ) -> None:
        self.source = source
        self.data = data
        self.root = root
        self.layers = layers


def read_yaml(path: str | Path) -> YamlDocument:
    """The parsed YAML of ``path`` and its node tree; a syntax error becomes a ``ScenarioError``."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(source, [f"cannot read the file: {error.strerror}"]) from None
    try:
        return YamlDocument(
            source, yaml.safe_load(text), yaml.compose(text, Loader=yaml.SafeLoader)
        )
    except yaml.YAMLError as error:
        raise ScenarioError(source, [f"not valid YAML: {error}"]) from None


def load_yaml(path: str | Path) -> Any:
    """The parsed YAML of ``path``; a syntax error becomes a ``ScenarioError``."""
    return read_yaml(path).data


def resolve_paths(data: Any, directory: Path) -> Any:
    """``data`` with every relative ``path`` of a recorded arrival made relative to
    ``directory`` (the scenario file's), so the scenario reads the same file from anywhere;
    anything else is left as it is (the model reports it)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("arrivals"), list):
        return data
    arrivals = []
    for arrival in data["arrivals"]:
        path = arrival.get("path") if _is_recorded(arrival) else None
        if isinstance(path, str) and path and not Path(path).is_absolute():
            arrival = {**arrival, "path": str((directory / path).absolute())}
        arrivals.append(arrival)
    return {**data, "arrivals": arrivals}


def _is_recorded(arrival: Any) -> bool:
    return isinstance(arrival, Mapping) and arrival.get("kind") == "recorded"


def read_scenario(path: str | Path, _within: tuple[Path, ...] = ()) -> YamlDocument:
    """The data of the scenario file ``path`` with every recorded arrival's relative ``path``
    read next to the file and, for an overlay (``extends: BASE``), laid over its base
    (``harness.scenarios.overlay``); the node tree is the file's own, for its lines. A base that
    cannot be read, or that extends the file back, is a problem at ``extends``."""
    document = read_yaml(path)
    directory = Path(path).parent
    data = resolve_paths(document.data, directory)
    if not isinstance(data, Mapping) or EXTENDS not in data:
        return YamlDocument(document.source, data, document.root)
    named = data[EXTENDS]
    if not isinstance(named, str) or not named.strip():
        problem = Problem((EXTENDS,), "must name the scenario file this one changes")
        raise ScenarioError(document.source, [problem], document.root)
    base_path = Path(named) if Path(named).is_absolute() else directory / named
    here = Path(path).resolve()
    if base_path.resolve() in (*_within, here):
        problem = Problem((EXTENDS,), f"{named}: extends this file back (a cycle of overlays)")
        raise ScenarioError(document.source, [problem], document.root)
    try:
        base = read_scenario(base_path, (*_within, here))
    except ScenarioError as error:
        problem = Problem((EXTENDS,), f"{named}: the scenario it extends cannot be read")
        raise ScenarioError(
            document.source, [problem], document.root, elsewhere=error.located
        ) from None
    own = {key: value for key, value in data.items() if key != EXTENDS}
    below = base.layers or ((base.source, base.root, base.data),)
    layers = ((document.source, document.root, own), *below)
    return YamlDocument(document.source, merge(base.data, own), document.root, layers)


def _depth(data: Any, loc: Sequence[str | int]) -> int:
    """How many leading parts of ``loc`` ``data`` holds."""
    depth = 0
    for part in loc:
        if isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        elif not isinstance(data, Mapping) or part not in data:
            break
        else:
            data = data[part]
        depth += 1
    return depth


def _told_by_layer(document: YamlDocument) -> ScenarioError:
    """The problems of an overlay's merged data, each told in the file that wrote its field
    (the deepest match of its path; the overlay on a tie or where none holds it)."""
    data = document.data
    try:
        Scenario.model_validate(dict(data))
        problems: list[Problem] = []
    except ValidationError as error:
        problems = _all_problems(data, error)
    own: list[Problem] = []
    elsewhere: list[tuple[str, int | None, str]] = []
    for problem in problems:
        depths = [_depth(layer[2], problem.loc) for layer in document.layers]
        best = max(range(len(depths)), key=lambda i: (depths[i], -i))
        if best == 0 or depths[best] == 0:
            own.append(problem)
            continue
        source, root, _data = document.layers[best]
        elsewhere.append((source, line_of(root, problem.loc), str(problem)))
    return ScenarioError(document.source, own, document.root, elsewhere=elsewhere)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file (an overlay laid over the file it extends);
    problems name their file and line. A recorded arrival's relative ``path`` is read next to
    the file that names it."""
    document = read_scenario(path)
    try:
        return parse_scenario(document.data, document.source, document.root)
    except ScenarioError:
        if not document.layers:
            raise
        raise _told_by_layer(document) from None
