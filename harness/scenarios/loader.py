"""Reading scenario files, with errors that name the field (NB-1).

Why a formatter of our own: pydantic's default message spreads one problem over three lines and
spells locations as ``organizations.1.plan``; a scenario author wants one line per problem that
points at the YAML key, ``organizations[1].plan: unknown plan 'gold'``. Errors inside the
``config`` block are SimConfig's own, reported under ``config.``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.scenarios.model import Scenario
from sim.config import SimConfig

__all__ = ["ScenarioError", "format_errors", "load_scenario", "load_yaml", "parse_scenario"]

#: Discriminator tags pydantic inserts into locations of tagged unions; they are not YAML keys.
_TAGS = frozenset(
    {"poisson", "diurnal", "burst", "constant", "exponential", "lognormal", "uniform"}
)


class ScenarioError(ValueError):
    """A scenario or sweep file that cannot be used; ``problems`` lists ``path: message`` lines."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__(f"{source}: invalid\n" + "\n".join(f"  {p}" for p in self.problems))


def _path(loc: Sequence[int | str], prefix: str = "") -> str:
    text = prefix
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part in _TAGS:
            continue
        else:
            text += f".{part}" if text else str(part)
    return text


def format_errors(error: ValidationError, prefix: str = "") -> list[str]:
    """One ``path: message`` line per problem of a pydantic error."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        message = str(item["msg"]).removeprefix("Value error, ")
        path = _path(item["loc"], prefix)
        # Cross-field problems already start with their own path, one per line.
        for line in message.splitlines():
            lines.append(f"{path}: {line}" if path and not line.startswith(path) else line)
    return lines


def parse_scenario(data: object, source: str = "<scenario>") -> Scenario:
    """A ``Scenario`` from already-parsed YAML/JSON data, or ``ScenarioError``."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, ["the file must hold a mapping of scenario fields"])
    config = data.get("config")
    if isinstance(config, Mapping) and "seed" not in config:
        try:
            SimConfig.model_validate(dict(config))
        except ValidationError as error:
            raise ScenarioError(source, format_errors(error, "config")) from None
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as error:
        raise ScenarioError(source, format_errors(error)) from None


def load_yaml(path: str | Path) -> Any:
    """The parsed YAML of ``path``; a syntax error becomes a ``ScenarioError``."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(source, [f"cannot read the file: {error.strerror}"]) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError(source, [f"not valid YAML: {error}"]) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file."""
    return parse_scenario(load_yaml(path), str(path))
