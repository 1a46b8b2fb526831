"""The README stays true: its Python example runs and the make targets it names exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.req("SIM-7")
def test_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "the README shows how to drive the simulator from Python"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})  # our own documentation


def test_make_targets_named_in_the_readme_exist() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    named = set(re.findall(r"`make ([a-z][a-z-]*)`", README)) | set(
        re.findall(r"^make ([a-z][a-z-]*)", README, re.M)
    )
    assert {"demo", "test"} <= named
    assert named <= targets


def test_ci_runs_exactly_make_test() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    commands = [
        ln for ln in script.splitlines() if ln.strip() and not ln.startswith(("#", "set ", "cd "))
    ]
    assert commands == ["make test"]
