"""The implementation stands alone: nothing in it imports the simulator or the harness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent
FORBIDDEN = ("sim", "harness")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "__import__":
            names.update(a.value for a in node.args if isinstance(a, ast.Constant))
    return names


@pytest.mark.req("HAR-12")
def test_no_module_imports_sim_or_harness() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) > 15
    offenders = {
        path.name: sorted(
            name
            for name in imported_modules(path)
            if str(name).split(".")[0] in FORBIDDEN
            or str(name).startswith(("tests.harness", "tests.sim", "tests.conformance"))
        )
        for path in modules
    }
    assert not {k: v for k, v in offenders.items() if v}, offenders


@pytest.mark.req("HAR-12")
def test_absolute_imports_stay_inside_the_package() -> None:
    allowed_roots = {
        "__future__", "argparse", "ast", "asyncio", "base64", "collections", "contextlib",
        "copy", "dataclasses", "datetime", "email", "hashlib", "heapq", "hmac", "io",
        "itertools", "json", "logging", "math", "pathlib", "re", "secrets", "signal",
        "string", "struct", "subprocess", "sys", "threading", "time", "typing", "wave",
        "warnings", "zoneinfo",
        "starlette", "uvicorn", "httpx", "ulid", "PIL", "pytest",
    }  # fmt: skip
    for path in sorted(PACKAGE.glob("*.py")):
        for name in imported_modules(path):
            root = str(name).split(".")[0]
            if root == "tests":
                assert str(name).startswith("tests.independent"), (path.name, name)
            else:
                assert root in allowed_roots, (path.name, name)
