"""One seam over SimPy: only ``sim/clock.py`` touches SimPy's internals.

Its calendar heap, event counter, time and priorities, and the stepping of the environment,
belong to the clock; every other module of ``sim/``, ``harness/`` and ``bench/`` reads
``Clock.now`` and schedules with ``Clock.after``/``Clock.follow`` or SimPy's public API
(processes, timeouts). The checker reads each module's syntax tree, so it also catches what a
text search misses (an alias, a line break inside a call).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[1]
PACKAGES: Final = ("sim", "harness", "bench")

# --- the SimPy seam ----------------------------------------------------------------------------

#: The one module that may touch SimPy's internals.
SEAM: Final = "sim/clock.py"
#: Private attributes of SimPy's environment and events.
SIMPY_PRIVATE: Final = frozenset(
    {"_now", "_queue", "_eid", "_active_proc", "_ok", "_value", "_defused", "_generator"}
)
#: SimPy's event priorities: only the calendar's owner has a use for them.
SIMPY_PRIORITIES: Final = frozenset({"NORMAL", "URGENT"})
#: Functions that step a bare SimPy environment of their own (the benchmarks' yardstick), which
#: no clock drives: ``(module, function)``.
BARE_SIMPY: Final = frozenset({("bench/bench_sessions.py", "_baseline")})


class _SeamChecker(ast.NodeVisitor):
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.function: list[str] = []
        self.problems: list[tuple[int, str]] = []

    def _flag(self, node: ast.AST, what: str) -> None:
        self.problems.append((getattr(node, "lineno", 0), what))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.function.append(node.name)
        self.generic_visit(node)
        self.function.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # Another object's private SimPy attribute (an object's own ``self._queue`` is its own).
        receiver = node.value
        is_self = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")
        if node.attr in SIMPY_PRIVATE and not is_self:
            self._flag(node, f"reads SimPy's private {ast.unparse(node)}")
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module.startswith("simpy"):
            for alias in node.names:
                if alias.name in SIMPY_PRIORITIES:
                    self._flag(node, f"imports SimPy's priority {alias.name}")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        text = ast.unparse(node)
        if name == "heappush" and node.args:
            heap = ast.unparse(node.args[0]).lower()
            if any(word in heap for word in ("calendar", "queue", "env")):
                self._flag(node, f"pushes on a calendar: {text}")
        if name == "next" and node.args and ast.unparse(node.args[0]).endswith("eid"):
            self._flag(node, f"draws an event number: {text}")
        if isinstance(func, ast.Attribute) and name in ("step", "run"):
            receiver = ast.unparse(func.value)
            bare = (self.filename, self.function[-1] if self.function else "") in BARE_SIMPY
            if (receiver == "env" or receiver.endswith((".env", "_env"))) and not bare:
                self._flag(node, f"steps the environment behind the clock: {text}")
        self.generic_visit(node)


def seam_problems(source: str, filename: str = "<source>") -> list[str]:
    """Every place ``source`` reaches past the clock into SimPy, as ``file:line: what``."""
    checker = _SeamChecker(filename)
    checker.visit(ast.parse(source, filename))
    return [f"{filename}:{line}: {what}" for line, what in sorted(set(checker.problems))]


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((REPO / package).rglob("*.py"))


@pytest.mark.req("SIM-1")
def test_only_the_clock_touches_simpys_internals() -> None:
    modules = [path for path in _modules() if path.relative_to(REPO).as_posix() != SEAM]
    assert len(modules) > 100
    problems = [
        problem
        for path in modules
        for problem in seam_problems(
            path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix()
        )
    ]
    assert not problems, "only sim/clock.py may touch SimPy's internals:\n" + "\n".join(problems)


@pytest.mark.req("SIM-1")
@pytest.mark.parametrize(
    "source",
    [
        "now = self._env._now",
        "now = env._now",
        "now = pool.env._now",
        "queue = clock.env._queue",
        "x = platform.clock.env._eid",
        "heappush(self._calendar, (1.0, 1, 0, timer))",
        "heapq.heappush(\n    env._queue, item)",
        "heappush(pool.queue, item)",
        "n = next(self._eid)",
        "n = next(pool.eid)",
        "from simpy.events import NORMAL",
        "from simpy.events import URGENT as FIRST",
        "platform.clock.env.step()",
        "env.run(until=5)",
        "world.kernel.clock.env.run()",
        "def _baseline():\n    env.run()",  # allowed only in bench/bench_sessions.py
    ],
)
def test_the_seam_checker_catches(source: str) -> None:
    assert seam_problems(source), source


@pytest.mark.req("SIM-1")
@pytest.mark.parametrize(
    "source",
    [
        "self._queue.append(job)",  # an object's own queue
        "heappush(self._idle, worker.order)",
        "now = self._clock.now",
        "clock.after(delay, timer)",
        "yield env.timeout(5)",
        "env.process(work())",
        "clock.step()",
        "self._queue = deque()",
    ],
)
def test_the_seam_checker_allows(source: str) -> None:
    assert not seam_problems(source), source


@pytest.mark.req("SIM-1")
def test_the_seam_checker_allows_the_yardstick_its_bare_simpy() -> None:
    source = "def _baseline():\n    env = simpy.Environment()\n    env.run()"
    assert not seam_problems(source, "bench/bench_sessions.py")
