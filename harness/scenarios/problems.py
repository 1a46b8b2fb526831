"""One problem of a scenario or sweep file: where it is (a path, and a line when known) and what.

Why locations stay structured until the end: pydantic reports a problem at a location such as
``("organizations", 1, "plan")``; the author wants ``organizations[1].plan`` *and* the line of
the file to look at. Keeping the location as a tuple lets the loader find that line by walking
the YAML node tree (``yaml.compose`` keeps every node's position), for pydantic's problems and
for the cross-field checks alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import yaml

__all__ = ["Loc", "Problem", "line_of", "path_of"]

Loc = tuple[str | int, ...]

#: Discriminator tags pydantic inserts into locations of tagged unions; they are not YAML keys.
_TAGS = frozenset(
    {"poisson", "diurnal", "burst", "recorded", "constant", "exponential", "lognormal", "uniform"}
)


def _keys(loc: Sequence[str | int]) -> Loc:
    return tuple(part for part in loc if isinstance(part, int) or part not in _TAGS)


def path_of(loc: Sequence[str | int]) -> str:
    """``("organizations", 1, "plan")`` as ``organizations[1].plan`` (tags left out)."""
    text = ""
    for part in _keys(loc):
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


@dataclass(frozen=True, slots=True)
class Problem:
    """A problem at ``loc`` (a pydantic-style location) and what is wrong there."""

    loc: Loc
    message: str

    @property
    def path(self) -> str:
        return path_of(self.loc)

    def __str__(self) -> str:
        path = self.path
        return f"{path}: {self.message}" if path else self.message


def line_of(root: yaml.Node | None, loc: Sequence[str | int]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` under ``root``; for a key that is missing,
    the line of the nearest mapping or list that should hold it."""
    if root is None:
        return None
    node: yaml.Node = root
    for part in _keys(loc):
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                    child = value
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part >= 0:
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            break
        node = child
    return int(node.start_mark.line) + 1
