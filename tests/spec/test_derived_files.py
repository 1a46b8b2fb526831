"""The derived files (component schemas, contract profile) are current, deterministic and
rebuilt idempotently; ``check`` notices a stale or orphaned one."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.contract import build_all, check, derive_all, stale_files
from harness.contract.loader import OPENAPI_FILE, PROFILE_FILE


@pytest.fixture
def copied_spec(spec_dir: Path, tmp_path: Path) -> Path:
    """The contract directory copied aside, so a test can break it."""
    target = tmp_path / "spec"
    shutil.copytree(spec_dir, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.mark.req("HAR-5", "VER-1")
def test_committed_derived_files_are_current(spec_dir: Path) -> None:
    assert stale_files(spec_dir) == []
    assert check(spec_dir) == []


@pytest.mark.req("HAR-5")
def test_build_is_deterministic_and_idempotent(copied_spec: Path) -> None:
    first = derive_all(copied_spec)
    assert derive_all(copied_spec) == first
    written = build_all(copied_spec)
    assert written == first
    stamps = {path: path.stat().st_mtime_ns for path in written}
    assert build_all(copied_spec) == first
    assert {path: path.stat().st_mtime_ns for path in written} == stamps  # nothing rewritten
    assert copied_spec / PROFILE_FILE in first
    assert all(path.read_text(encoding="utf-8") == text for path, text in first.items())


@pytest.mark.req("HAR-5")
def test_check_notices_stale_and_orphaned_files(copied_spec: Path) -> None:
    session = copied_spec / "schemas" / "Session.json"
    session.write_text("{}\n", encoding="utf-8")
    orphan = copied_spec / "schemas" / "Gone.json"
    orphan.write_text("{}\n", encoding="utf-8")
    assert stale_files(copied_spec) == sorted([session, orphan])
    assert main(["spec", "check", "--spec-dir", str(copied_spec)]) == 1
    assert main(["spec", "build", "--spec-dir", str(copied_spec)]) == 0
    assert not orphan.exists()
    assert main(["spec", "check", "--spec-dir", str(copied_spec)]) == 0


@pytest.mark.req("HAR-5")
def test_check_notices_an_undecided_gap(copied_spec: Path) -> None:
    spec = copied_spec / OPENAPI_FILE
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("x-gap: GAP-RUN-11", "x-gap: GAP-RUN-99", 1), encoding="utf-8")
    build_all(copied_spec)
    assert check(copied_spec) == [
        f"{OPENAPI_FILE}: x-gap GAP-RUN-99 has no **GAP-RUN-99** entry in DECISIONS.md"
    ]


@pytest.mark.req("VER-1")
def test_one_spec_command_line(copied_spec: Path) -> None:
    """``avatar-sim spec`` (``python -m harness spec``) is the only command line of the tooling."""
    assert importlib.util.find_spec("harness.contract.__main__") is None
    done = subprocess.run(
        [sys.executable, "-m", "harness", "spec", "check", "--spec-dir", str(copied_spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "contract OK"), done.stderr
