"""The example scenarios, sweeps and notebooks, wherever avatar-sim is installed.

Why a lookup of its own: the examples live at the top of a source checkout (``scenarios/``,
``sweeps/``, ``notebooks/``), and an installed wheel carries the same folders as package data in
``harness/_examples`` (pyproject's force-include). A notebook or a test that asks for
``example("sweeps", "workers.yaml")`` gets the file in either case, never by searching the
working directory, so a notebook copied anywhere (``avatar-sim examples DIR``) still runs. The
checkout wins, as for the contract in ``spec/``, so an edit takes effect without reinstalling.

The example test suite (session lifecycle tests that run in process and by URL) is part of the
package itself, in ``harness/testing/example_tests``, and is copied to ``DIR/tests``.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path
from typing import Literal

__all__ = ["KINDS", "SUITE", "Kind", "copy_examples", "example", "examples_dir", "suite_files"]

Kind = Literal["scenarios", "sweeps", "notebooks"]
KINDS: tuple[Kind, ...] = ("scenarios", "sweeps", "notebooks")

#: Where ``copy_examples`` puts the example test suite.
SUITE = "tests"

_CHECKOUT = Path(__file__).resolve().parents[1]
_SUITE_SOURCE = Path(__file__).resolve().parent / "testing" / "example_tests"


def _packaged() -> Path:
    return Path(str(resources.files("harness").joinpath("_examples")))


def examples_dir() -> Path:
    """The folder holding ``scenarios/``, ``sweeps/`` and ``notebooks/``: the checkout's top
    level when this is a source checkout, else the installed package's ``_examples``."""
    if all((_CHECKOUT / kind).is_dir() for kind in KINDS):
        return _CHECKOUT
    packaged = _packaged()
    if all((packaged / kind).is_dir() for kind in KINDS):
        return packaged
    raise FileNotFoundError("the example files are missing from this installation of avatar-sim")


def example(kind: Kind, name: str) -> Path:
    """The path of one example file, e.g. ``example("scenarios", "erlang_b.yaml")``."""
    path = examples_dir() / kind / name
    if not path.is_file():
        known = ", ".join(sorted(p.name for p in (examples_dir() / kind).iterdir()))
        raise FileNotFoundError(f"no example {kind}/{name}; there are: {known}")
    return path


def suite_files() -> list[Path]:
    """The example test suite's files (``test_*.py``), in name order."""
    return sorted(path for path in _SUITE_SOURCE.glob("*.py") if path.is_file())


def copy_examples(
    destination: str | Path, *, overwrite: bool = False, tests_only: bool = False
) -> list[Path]:
    """Copy every example file into ``destination/<kind>/`` and the example test suite into
    ``destination/tests/`` (only the suite when ``tests_only``); returns the files written.

    Existing files are left alone unless ``overwrite``: ``FileExistsError`` names the first.
    """
    files = (
        []
        if tests_only
        else [
            path
            for kind in KINDS
            for path in sorted((examples_dir() / kind).iterdir())
            if path.is_file() and not path.name.startswith(".")
        ]
    )
    target = Path(destination)
    planned = [(path, target / path.parent.name / path.name) for path in files]
    planned += [(path, target / SUITE / path.name) for path in suite_files()]
    if not overwrite:
        for _path, copy in planned:
            if copy.exists():
                raise FileExistsError(f"{copy} exists; pass overwrite to replace it")
    written = []
    for path, copy in planned:
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
        written.append(copy)
    return written
