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
    """A parsed YAML file: its data and its node tree (for line numbers)."""

    def __init__(self, source: str, data: Any, root: yaml.Node | None) -> None:
        self.source = source
        self.data = data
        self.root = root


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


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file; problems name their line. A recorded
    arrival's relative ``path`` is read next to the file."""
    document = read_yaml(path)
    data = resolve_paths(document.data, Path(path).parent)
    return parse_scenario(data, document.source, document.root)
