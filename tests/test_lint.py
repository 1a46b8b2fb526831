"""Static checks as tests: ruff, mypy (strict), and the purity of the domain package ``sim/``.

The domain rule (ARCHITECTURE.md's layers): every module of ``sim/`` except the HTTP facade
``sim/asgi/`` imports no HTTP, data-frame, schema or harness code, never reads the wall clock and
never uses the global ``random`` state (only seeded ``random.Random`` instances).
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[1]
SIM: Final = REPO / "sim"
FACADE: Final = SIM / "asgi"

BANNED_IMPORTS: Final = frozenset(
    {"starlette", "httpx", "pandas", "uvicorn", "jsonschema", "schemathesis", "harness"}
    | {"os", "pathlib", "shutil", "tempfile", "glob", "sqlite3", "socket"}
)
"""Top-level packages the domain must not import: HTTP, data frames, the harness, and the file
system or network (the domain works on bytes in memory; the facade and harness do the I/O)."""

WALL_CLOCK: Final = frozenset(
    {
        *(
            f"time.{name}"
            for name in (
                "time",
                "time_ns",
                "monotonic",
                "monotonic_ns",
                "perf_counter",
                "perf_counter_ns",
                "process_time",
                "localtime",
                "gmtime",
                "ctime",
                "asctime",
                "sleep",
            )
        ),
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)
"""Qualified names that read (or wait on) the wall clock."""

RANDOM_ALLOWED: Final = frozenset({"random.Random"})
"""The one name of ``random`` the domain may use: the seeded generator class."""


def _run(*command: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        pytest.fail(
            f"`{' '.join(command)}` exited {completed.returncode}\n"
            f"{completed.stdout}\n{completed.stderr}",
            pytrace=False,
        )


LINTED = [name for name in ("sim", "harness", "tests", "bench") if (REPO / name).is_dir()]


def test_ruff_check() -> None:
    _run("ruff", "check", *LINTED)


def test_ruff_format() -> None:
    # The same check as `make lint`, so the two never disagree.
    _run("ruff", "format", "--check", *LINTED)


def test_mypy_strict() -> None:
    # The files and strictness come from [tool.mypy] in pyproject.toml.
    _run("mypy")


# --- the purity of the domain ---------------------------------------------------------------------


class _Purity(ast.NodeVisitor):
    """Collects banned imports and banned uses, resolving names through the module's imports."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.problems: list[tuple[int, str]] = []

    def _check_name(self, line: int, qualified: str) -> bool:
        if qualified in WALL_CLOCK or any(qualified.startswith(f"{name}.") for name in WALL_CLOCK):
            self.problems.append((line, f"reads the wall clock: {qualified}"))
            return True
        if qualified.startswith("random.") and not any(
            qualified == allowed or qualified.startswith(f"{allowed}.")
            for allowed in RANDOM_ALLOWED
        ):
            self.problems.append((line, f"uses the global random module: {qualified}"))
            return True
        return False

    def _check_import(self, line: int, module: str) -> None:
        if module.split(".")[0] in BANNED_IMPORTS:
            self.problems.append((line, f"imports {module}"))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node.lineno, alias.name)
            if alias.asname is not None:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module is None:
            return  # relative: a module of sim/ itself
        self._check_import(node.lineno, node.module)
        for alias in node.names:
            qualified = f"{node.module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = qualified
            self._check_name(node.lineno, qualified)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts: list[str] = []
        current: ast.expr = node
        while isinstance(current, ast.Attribute):
            parts.append(current.attr)
            current = current.value
        if isinstance(current, ast.Name) and current.id in self.aliases:
            qualified = ".".join([self.aliases[current.id], *reversed(parts)])
            if self._check_name(node.lineno, qualified):
                return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        # The builtin ``open`` (not ``Image.open(BytesIO(...))``, which is an attribute).
        if (
            isinstance(node.func, ast.Name)
            and node.func.id == "open"
            and "open" not in self.aliases
        ):
            self.problems.append((node.lineno, "does file I/O: open()"))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # A bare name bound by ``from time import time`` was reported at the import.
        return


def purity_problems(source: str, filename: str = "<source>") -> list[str]:
    """Every violation of the domain rules in ``source``, as ``file:line: what``."""
    checker = _Purity()
    checker.visit(ast.parse(source, filename))
    return [f"{filename}:{line}: {what}" for line, what in sorted(checker.problems)]


def _domain_modules() -> Iterator[Path]:
    for path in sorted(SIM.rglob("*.py")):
        if not path.is_relative_to(FACADE):
            yield path


@pytest.mark.req("SIM-1")
def test_domain_imports_no_http_and_reads_no_wall_clock() -> None:
    modules = list(_domain_modules())
    assert modules, "no module found under sim/"
    problems = [
        problem
        for path in modules
        for problem in purity_problems(
            path.read_text(encoding="utf-8"), str(path.relative_to(REPO))
        )
    ]
    assert not problems, "the domain must stay pure:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        "import httpx",
        "import starlette.responses",
        "from pandas import DataFrame",
        "from harness.trace import run",
        "import uvicorn as u",
        "import time\nx = time.time()",
        "import time as t\nt.sleep(1)",
        "from time import monotonic",
        "import datetime\nx = datetime.datetime.now()",
        "from datetime import datetime\nx = datetime.now(tz=None)",
        "from datetime import datetime as dt\nx = dt.utcnow()",
        "from datetime import date\nx = date.today()",
        "import random\nx = random.random()",
        "import random\nrandom.seed(1)",
        "from random import choice",
        "import random as r\nx = r.randint(1, 2)",
        "data = open('x.bin', 'rb').read()",
        "from pathlib import Path",
        "import os\nx = os.environ['SEED']",
    ],
    ids=lambda source: source.replace("\n", "; "),
)
def test_purity_checker_catches(source: str) -> None:
    assert purity_problems(source)


@pytest.mark.parametrize(
    "source",
    [
        "import random\nrng = random.Random(1)\nx = rng.random()",
        "from random import Random\nx = Random(2).choice([1])",
        "def f(rng: random.Random) -> float: ...",
        "from datetime import UTC, datetime, timedelta\nx = datetime(2026, 1, 1, tzinfo=UTC)",
        "import datetime\nx = datetime.timedelta(seconds=1)",
        "import simpy\nenv = simpy.Environment()\nx = env.now",
        "from . import clock\nfrom sim.clock import Clock",
        "x = obj.time.time()",
        "import io\nfrom PIL import Image\nx = Image.open(io.BytesIO(b''))",
    ],
    ids=lambda source: source.replace("\n", "; "),
)
def test_purity_checker_allows(source: str) -> None:
    assert purity_problems(source) == []


def _imported_modules(source: str) -> Iterator[str]:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and not node.level:
            yield node.module


@pytest.mark.req("SIM-8")
def test_no_module_of_sim_imports_the_harness() -> None:
    """The harness drives the simulator, never the other way round; the facade included (the
    spec loader both use lives in ``sim.asgi.openapi``)."""
    arrows = [
        f"{path.relative_to(REPO)}: {module}"
        for path in sorted(SIM.rglob("*.py"))
        for module in _imported_modules(path.read_text(encoding="utf-8"))
        if module.split(".")[0] == "harness"
    ]
    assert arrows == []


#: Pointers to what a fresh clone does not have: the issue tracker and the team's design notes.
#: The project names requirement ids (``spec/requirements.yaml``) and gap ids
#: (``spec/DECISIONS.md``) instead, which a reader can follow.
OUTSIDE_POINTERS: Final = re.compile(r"\bissues? #?\d+\b|\bDESIGN\.md\b", re.IGNORECASE)


def _outside_pointers(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if OUTSIDE_POINTERS.search(line)]


def test_no_text_points_at_what_a_clone_does_not_have() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=False
    ).stdout.split(b"\0")
    if not any(tracked):
        pytest.skip("not a git checkout")
    found: dict[str, list[str]] = {}
    for name in filter(None, (raw.decode() for raw in tracked)):
        path = REPO / name
        if (
            path.suffix not in {".py", ".md", ".yaml", ".yml", ".toml", ".ipynb"}
            or not path.is_file()
        ):
            continue
        if path == Path(__file__).resolve():
            continue
        hits = _outside_pointers(path.read_text(encoding="utf-8"))
        if hits:
            found[name] = hits
    assert not found, found


@pytest.mark.parametrize(
    ("line", "points_outside"),
    [
        ("# see issue 11 item 4", True),
        ("as issue #9 asked", True),
        ("the issues 3 and 4", True),
        ("read DESIGN.md first", True),
        ("an issue with the clock (SIM-8)", False),
        ("GAP-ERR-6 and SIM-7", False),
    ],
)
def test_the_outside_pointer_rule_catches(line: str, points_outside: bool) -> None:
    assert bool(_outside_pointers(line)) is points_outside
