"""The wheel carries the example scenarios, sweeps and notebooks; ``avatar-sim examples`` copies
them out; ``make lab`` starts as root. (NB-6: the notebooks run outside the checkout.)"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from harness import cli
from harness.examples import KINDS, SUITE, example, examples_dir, suite_files
from harness.scenarios import load_scenario
from harness.sweep import load_sweep

REPO = Path(__file__).resolve().parents[2]


def _sources() -> dict[str, list[str]]:
    return {kind: sorted(p.name for p in (REPO / kind).iterdir() if p.is_file()) for kind in KINDS}


@pytest.mark.req("NB-6", "HAR-7", "HAR-30")
def test_the_wheel_carries_the_examples(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(tmp_path), str(REPO)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("avatar_sim-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for kind, files in _sources().items():
        for name in files:
            assert f"harness/_examples/{kind}/{name}" in names, (kind, name)
    assert "harness/examples.py" in names and "harness/_spec/openapi.yaml" in names
    for path in suite_files():  # the example test suite is part of the package
        assert f"harness/testing/example_tests/{path.name}" in names, path.name
    console = REPO / "harness" / "serve" / "console" / "static"  # the served console's files
    for path in console.iterdir():
        assert f"harness/serve/console/static/{path.name}" in names, path.name


@pytest.mark.req("NB-1", "NB-3", "HAR-7")
def test_the_examples_command_copies_every_file_and_they_load_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "mine"
    assert cli.main(["examples", str(target)]) == 0
    assert f"example files copied to {target}" in capsys.readouterr().out
    assert {kind: sorted(p.name for p in (target / kind).iterdir()) for kind in KINDS} == _sources()
    assert sorted(p.name for p in (target / SUITE).iterdir()) == [p.name for p in suite_files()]
    load_scenario(target / "scenarios" / "default.yaml")
    _sweep, base, _points = load_sweep(target / "sweeps" / "workers.yaml")  # relative base works
    assert base.name == "erlang_b"
    assert cli.main(["examples", str(target)]) == 2  # never overwrites silently
    assert "exists" in capsys.readouterr().err
    assert cli.main(["examples", str(target), "--force"]) == 0


@pytest.mark.req("NB-6")
def test_examples_are_found_in_the_checkout_or_the_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import harness.examples as examples

    assert examples_dir() == REPO
    assert example("sweeps", "workers.yaml") == REPO / "sweeps" / "workers.yaml"
    with pytest.raises(FileNotFoundError, match="there are: "):
        example("scenarios", "nope.yaml")
    # Installed: no checkout beside the package, the files under harness/_examples.
    packaged = tmp_path / "_examples"
    for kind in KINDS:
        (packaged / kind).mkdir(parents=True)
    (packaged / "sweeps" / "workers.yaml").write_text("name: w\n", encoding="utf-8")
    monkeypatch.setattr(examples, "_CHECKOUT", tmp_path / "site-packages")
    monkeypatch.setattr(examples, "_packaged", lambda: packaged)
    assert example("sweeps", "workers.yaml") == packaged / "sweeps" / "workers.yaml"


@pytest.mark.req("NB-6")
def test_make_lab_allows_root_when_run_as_root() -> None:
    shown = subprocess.run(
        ["make", "-n", "lab"], cwd=REPO, capture_output=True, text=True, check=False,
        env={**os.environ, "MAKEFLAGS": ""},
    )  # fmt: skip
    line = next(x for x in shown.stdout.splitlines() if "jupyter lab" in x)
    assert ("--allow-root" in line) == (os.geteuid() == 0)
    assert line.rstrip().endswith("notebooks/")
