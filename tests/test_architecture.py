"""ARCHITECTURE.md names only what exists.

A maintainer's map that points at a moved module or a renamed function sends a newcomer looking
for something that is not there, so every file, module, function and constant the map names in
backticks is looked up: paths in the tree, dotted names by import, and bare identifiers among the
names the code defines.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[1]
MAP: Final = REPO / "ARCHITECTURE.md"
CODE: Final = ("sim", "harness", "bench", "tests")
TREE: Final = (*CODE, "spec", "notebooks", "scenarios", "sweeps", "docs", ".ci")

_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
_FILE_SUFFIXES: Final = (".py", ".yaml", ".yml", ".md", ".toml", ".json", ".ipynb", ".html")


def _is_code_name(word: str) -> bool:
    """An identifier the map means as code: snake_case with an underscore, CamelCase or a
    CONSTANT; plain words (``usage``, ``model``) are prose in backticks."""
    return bool(_IDENTIFIER.match(word)) and (
        "_" in word.strip("_") or word[1:] != word[1:].lower() or word.isupper()
    )


@cache
def defined_names() -> frozenset[str]:
    """Every name the code defines: modules, classes, functions, assigned names and attributes,
    and keyword parameters (an API's ``arrivals_from=`` is a name of its own)."""
    names: set[str] = set()
    for folder in CODE:
        for path in (REPO / folder).rglob("*.py"):
            names.add(path.stem)
            names.add(path.parent.name)
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    names.add(node.attr)
                elif isinstance(node, ast.arg):
                    names.add(node.arg)
    return frozenset(names)


def _path_exists(text: str) -> bool:
    """A path from the top of the tree, or (``model/rules.py``) the end of a path inside it."""
    candidate = text.rstrip("/")
    if (REPO / candidate).exists():
        return True
    return any(next((REPO / top).glob(f"**/{candidate}"), None) is not None for top in TREE)


def _dotted_exists(text: str) -> bool:
    """``sim.clock.Clock``: the longest importable prefix, then attributes."""
    parts = text.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def problems_in(spans: Iterable[str]) -> list[str]:
    """What the map's backticked spans name that does not exist."""
    problems = []
    for span in spans:
        word = span.split("(", 1)[0].strip()  # ``f(a=, b=)`` names ``f``
        if " " in word or not word:
            continue
        if "/" in word or word.endswith(_FILE_SUFFIXES):
            if not _path_exists(word):
                problems.append(f"no file or folder {word!r}")
        elif _DOTTED.match(word) and word.split(".")[0] in ("sim", "harness", "bench"):
            if not _dotted_exists(word):
                problems.append(f"{word!r} does not import")
        elif _DOTTED.match(word):
            missing = [part for part in word.split(".") if part not in defined_names()]
            if missing and any(_is_code_name(part) for part in missing):
                problems.append(f"{word!r}: nothing defines {', '.join(missing)}")
        elif _is_code_name(word) and word not in defined_names():
            problems.append(f"nothing defines {word!r}")
    return problems


@pytest.mark.req("ARCH-1")
def test_every_name_in_the_map_exists() -> None:
    spans = _CODE_SPAN.findall(MAP.read_text(encoding="utf-8"))
    assert len(spans) > 50
    problems = problems_in(spans)
    assert not problems, "ARCHITECTURE.md names what is not there:\n" + "\n".join(problems)


@pytest.mark.req("ARCH-1")
@pytest.mark.parametrize(
    ("span", "exists"),
    [
        ("sim/operations.py", True),
        ("model/rules.py", True),
        ("sim/no_such_module.py", False),
        ("sim.clock.Clock", True),
        ("sim.clock.NoSuchClock", False),
        ("harness.no_such_package", False),
        ("SESSION_EVENTS", True),
        ("split_debit", True),
        ("a_function_nobody_wrote", False),
        ("simulate(arrivals_from=, arrivals_until=)", True),
        ("Pipeline.no_such_method", False),
        ("usage", True),  # a plain word, not a name
    ],
)
def test_the_map_checker_tells_names_that_exist(span: str, exists: bool) -> None:
    assert (not problems_in([span])) is exists


#: The most lines a module of sim/ or harness/ may have: past it, a module holds two concepts.
MODULE_LINES: Final = 500
#: The most modules at the top of harness/ beside its packages (each tool is a package).
TOP_LEVEL_MODULES: Final = 8


def oversized(root: Path, limit: int = MODULE_LINES) -> list[str]:
    """Each module under ``root`` longer than ``limit`` lines, with its length."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root.parent)}: {lines} lines")
    return found


@pytest.mark.req("ARCH-3")
def test_no_module_passes_the_line_limit() -> None:
    found = [*oversized(REPO / "sim"), *oversized(REPO / "harness")]
    assert not found, f"modules over {MODULE_LINES} lines:\n" + "\n".join(found)


@pytest.mark.req("ARCH-3")
def test_the_harness_has_few_top_level_modules() -> None:
    modules = sorted(path.name for path in (REPO / "harness").glob("*.py"))
    assert len(modules) <= TOP_LEVEL_MODULES, modules


@pytest.mark.req("ARCH-3")
def test_the_size_check_finds_a_long_module(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "short.py").write_text("x = 1\n" * 3)
    (package / "long.py").write_text("x = 1\n" * 4)
    assert oversized(package, limit=3) == ["pkg/long.py: 4 lines"]


def _packages() -> list[str]:
    """Every package of sim/ and harness/, by its dotted name."""
    return sorted(
        ".".join(path.parent.relative_to(REPO).parts)
        for top in ("sim", "harness")
        for path in (REPO / top).rglob("__init__.py")
        if "example_tests" not in path.parts
    )


@pytest.mark.req("ARCH-5")
@pytest.mark.parametrize("package", _packages())
def test_every_public_name_of_a_package_imports(package: str) -> None:
    module = importlib.import_module(package)
    missing = []
    for name in getattr(module, "__all__", ()):
        try:
            getattr(module, name)
        except (AttributeError, ImportError) as error:
            missing.append(f"{name}: {error}")
    assert not missing, f"{package} lists names it cannot give:\n" + "\n".join(missing)
