"""No import circle between modules, at the top of a module or hidden inside a function.

Two modules that import each other (directly or through others) cannot be understood, tested or
moved one at a time, and which of them Python finishes first depends on who imported first.
A module may import another inside a function (to defer a heavy import, say), but not to hide a
circle: an import inside a function that leads back to its own module through the modules it
imports at run time means the two modules depend on each other, which a split that puts what
both need in a third module resolves.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("sim", "harness", "bench")


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((REPO / package).rglob("*.py"))


@dataclass(frozen=True)
class _Import:
    source: str  # the importing module
    target: str  # the imported module
    line: int
    deferred: bool  # inside a function


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _known(name: str, modules: set[str]) -> str | None:
    """The project module ``name`` refers to (``a.b.c`` may be a name inside ``a.b``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(
    source: str, module: str, modules: set[str], *, package: bool = False
) -> list[_Import]:
    """The project modules ``module`` imports when it runs: at its top level, and inside its
    functions (``deferred``); not those under ``if TYPE_CHECKING:``. ``package``: the module is
    a package's ``__init__`` (relative imports start from it, not from its parent)."""
    found: list[_Import] = []
    anchor = module if package else module.rpartition(".")[0]

    def absolute(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = anchor.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        return f"{base}.{node.module}" if node.module else base

    def visit(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for rest in child.orelse:
                    visit(rest, deferred)
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = absolute(child)
                names = [f"{base}.{alias.name}" for alias in child.names]
            for name in names:
                target = _known(name, modules)
                if target is not None and target != module:
                    found.append(_Import(module, target, child.lineno, deferred))
            function = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, deferred or function)

    visit(ast.parse(source), False)
    return found


def hidden_circles(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Each import inside a function that closes a circle of run-time imports. ``sources``:
    each module's text and whether it is a package's ``__init__``."""
    modules = set(sources)
    imports = [
        imp
        for name, (text, package) in sources.items()
        for imp in runtime_imports(text, name, modules, package=package)
    ]
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for imp in imports:
        graph[imp.source].add(imp.target)
    problems = set()
    for imp in imports:
        if not imp.deferred:
            continue
        path = _path(graph, imp.target, imp.source)
        if path is not None:
            problems.add(
                f"{imp.source}:{imp.line} imports {imp.target} inside a function, and "
                f"{' -> '.join(path)} imports it back"
            )
    return sorted(problems)


def _path(graph: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """A chain of imports from ``start`` to ``goal``, or ``None`` (breadth first)."""
    came_from: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            if node == goal:
                chain = [node]
                while (previous := came_from[chain[-1]]) is not None:
                    chain.append(previous)
                return chain[::-1]
            for target in sorted(graph.get(node, ())):
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    return None


@pytest.mark.req("NB-1")
def test_no_import_inside_a_function_hides_a_circle() -> None:
    sources = {
        _module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in _modules()
    }
    assert len(sources) > 100
    problems = hidden_circles(sources)
    assert not problems, "imports inside functions that close a circle:\n" + "\n".join(problems)


@pytest.mark.req("NB-1")
def test_the_circle_checker_catches_a_circle_through_a_function_only() -> None:
    circle = {
        "pkg": ("", True),
        "pkg.a": ("from .b import thing\n", False),
        "pkg.b": ("thing = 1\ndef later():\n    from pkg.a import other\n", False),
        "pkg.c": ("def later():\n    from pkg.b import thing\n", False),  # no way back: fine
        "pkg.d": (
            "if TYPE_CHECKING:\n    from pkg.a import x\ndef f():\n    import pkg.d\n",
            False,
        ),
    }
    problems = hidden_circles(circle)
    assert len(problems) == 1 and problems[0].startswith("pkg.b:3 imports pkg.a"), problems
    assert not hidden_circles({**circle, "pkg.b": ("thing = 1\n", False)})


def circles(sources: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """Every set of modules that import one another at run time, directly or through others
    (the strongly connected components of the import graph with more than one module)."""
    modules = set(sources)
    graph: dict[str, list[str]] = {name: [] for name in sorted(modules)}
    for name, (text, package) in sources.items():
        graph[name] = sorted(
            {imp.target for imp in runtime_imports(text, name, modules, package=package)}
        )
    # Tarjan's algorithm, iterative so a deep chain of imports cannot exhaust the stack.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            following = next(edges, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    work.append((following, iter(graph[following])))
                elif following in on_stack:
                    low[node] = min(low[node], index[following])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


@pytest.mark.req("ARCH-2")
def test_no_modules_import_one_another() -> None:
    sources = {
        _module_name(path): (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for path in _modules()
    }
    found = circles(sources)
    assert not found, "modules that import one another:\n" + "\n".join(
        " <-> ".join(members) for members in found
    )


@pytest.mark.req("ARCH-2")
def test_the_circle_finder_finds_circles_at_any_depth() -> None:
    sources = {
        "pkg": ("from pkg.a import thing\n", True),
        "pkg.a": ("from pkg.b import other\nthing = 1\n", False),
        "pkg.b": ("import pkg.c\nother = 2\n", False),
        "pkg.c": ("from pkg import thing\n", False),  # back to the package: a circle of four
        "pkg.d": ("import pkg.e\n", False),
        "pkg.e": ("if TYPE_CHECKING:\n    import pkg.d\n", False),  # typing only: no circle
    }
    assert circles(sources) == [["pkg", "pkg.a", "pkg.b", "pkg.c"]]
    assert not circles({**sources, "pkg.c": ("thing = 3\n", False)})
