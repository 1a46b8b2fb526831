"""NB-14: a scenario file that extends another (``extends: BASE``) changes only its own fields;
every command reads it as it reads any scenario."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness import cli
from harness.scenarios import ScenarioError, load_scenario, merge, write_overlay
from harness.sweep.model import load_sweep
from tests.scenarios.helpers import small

pytestmark = pytest.mark.req("NB-14")


def _base(tmp_path: Path) -> Path:
    """A base scenario next to its own recording (a relative path)."""
    (tmp_path / "base").mkdir()
    pd.DataFrame({"offset_seconds": [0.0, 60.0, 120.0]}).to_csv(
        tmp_path / "base" / "day.csv", index=False
    )
    data = small(
        config={"scheduler": {"workers": 3, "max_queue_length": 5}},
        arrivals=[{"kind": "recorded", "path": "day.csv"}],
        runs=[],
    )
    path = tmp_path / "base" / "base.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_an_overlay_merges_mappings_and_replaces_everything_else() -> None:
    base = {"config": {"scheduler": {"workers": 3, "max_queue_length": 5}}, "arrivals": [1, 2]}
    over = {"config": {"scheduler": {"workers": 7}}, "arrivals": [3], "seed": 9}
    assert merge(base, over) == {
        "config": {"scheduler": {"workers": 7, "max_queue_length": 5}},
        "arrivals": [3],
        "seed": 9,
    }
    assert base["config"] == {"scheduler": {"workers": 3, "max_queue_length": 5}}  # untouched
    # A value of a union (it names its kind) is replaced whole: its fields go with its kind.
    length = {"sessions": {"length": {"kind": "exponential", "mean": 60}, "audio": None}}
    fitted = {"sessions": {"length": {"kind": "lognormal", "median": 50, "sigma": 0.5}}}
    assert merge(length, fitted) == {
        "sessions": {"length": {"kind": "lognormal", "median": 50, "sigma": 0.5}, "audio": None}
    }


def test_overlays_stack_and_each_file_reads_its_paths_next_to_itself(tmp_path: Path) -> None:
    base = _base(tmp_path)
    first = write_overlay(
        tmp_path / "derived" / "calibrated.yaml",
        {"config": {"scheduler": {"workers": 6}}},
        extends=base,
        header="fitted by a test\nsecond line",
    )
    text = first.read_text(encoding="utf-8")
    assert text.startswith("# fitted by a test\n# second line\nextends: ../base/base.yaml\n")
    second = write_overlay(
        tmp_path / "derived" / "plan" / "plan.yaml",
        {"pool_schedule": [{"at": 0, "workers": 4}, {"at": 600, "workers": 2}]},
        extends=first,
    )
    scenario = load_scenario(second)
    assert scenario.sim_config().scheduler.workers == 6  # the calibration's
    assert scenario.sim_config().scheduler.max_queue_length == 5  # the base's
    assert [c.workers for c in scenario.pool_schedule] == [4, 2]
    (arrival,) = scenario.arrivals
    assert Path(arrival.path).resolve() == (tmp_path / "base" / "day.csv").resolve()  # type: ignore[union-attr]
    # Every command reads an overlay as any scenario: a run, a sweep over it.
    out = tmp_path / "run"
    assert cli.main(["run", str(second), "--out", str(out), "--no-figures"]) == 0
    assert (out / "sessions.parquet").is_file()
    sweep = tmp_path / "derived" / "sweep.yaml"
    data = {"base": "plan/plan.yaml", "grid": {"seed": [1, 2]}, "metrics": ["session_clients"]}
    sweep.write_text(yaml.safe_dump(data), encoding="utf-8")
    _sweep, swept, points = load_sweep(sweep)
    assert swept == scenario and len(points) == 2


def test_a_broken_chain_is_refused_naming_each_file(tmp_path: Path) -> None:
    base = _base(tmp_path)
    loop = tmp_path / "loop.yaml"
    loop.write_text("extends: loop.yaml\nseed: 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(loop)
    assert "extends: loop.yaml: extends this file back (a cycle of overlays)" in str(info.value)
    bad_base = tmp_path / "base" / "bad.yaml"
    data = yaml.safe_load(base.read_text(encoding="utf-8"))
    data["organizations"] = [{"name": "A", "plan": "gold"}]
    bad_base.write_text(yaml.safe_dump(data), encoding="utf-8")
    over = tmp_path / "over.yaml"
    over.write_text("extends: base/bad.yaml\nseed: 2\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(over)
    # The problem is told in the base file, at the line that wrote it.
    line = bad_base.read_text(encoding="utf-8").splitlines().index("  plan: gold")
    assert info.value.located == (
        (str(bad_base), line + 1, "organizations[0].plan: unknown plan 'gold'; allowed: free, "
         "starter, pro, enterprise"),
    )  # fmt: skip
    over.write_text("extends: base/bad.yaml\norganizations: [{name: B, plan: iron}]\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(over)
    assert [(where, line) for where, line, _ in info.value.located] == [(str(over), 2)]
    missing = tmp_path / "missing.yaml"
    missing.write_text("extends: nowhere.yaml\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(missing)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("extends: 3\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="must name the scenario file"):
        load_scenario(wrong)
