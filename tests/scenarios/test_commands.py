"""``avatar-sim run`` and ``avatar-sim sweep``: files written, errors reported, exit codes."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from harness import cli
from harness.runner.tables import TABLES
from tests.scenarios.helpers import small

# The helper's burst (at 5 min, over 30 s) would end after a 5-minute run: arrivals only.
POISSON = [{"kind": "poisson", "rate_per_hour": 40}]


def _write(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.req("NB-2")
def test_run_writes_parquet_tables_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = _write(tmp_path / "s.yaml", small())
    out = tmp_path / "out"
    assert cli.main(["run", str(scenario), "--seed", "8", "--out", str(out)]) == 0
    for name in TABLES:
        assert (out / f"{name}.parquet").is_file(), name
    sessions = pd.read_parquet(out / "sessions.parquet")
    assert str(sessions["created_at"].dtype) == "datetime64[us, UTC]"
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "(seed 8)" in summary
    assert summary in capsys.readouterr().out


@pytest.mark.req("NB-1")
def test_run_reports_an_invalid_scenario_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = small()
    bad["organizations"][1]["plan"] = "gold"
    path = _write(tmp_path / "bad.yaml", bad)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "organizations[1].plan: unknown plan 'gold'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.req("NB-3")
def test_sweep_writes_runs_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path / "base.yaml", small(duration="5m", cooldown=0, runs=[], arrivals=POISSON))
    sweep = _write(
        tmp_path / "sweep.yaml",
        {"name": "cli", "base": "base.yaml", "seed": 1, "replications": 3,
         "grid": {"config.scheduler.workers": [1, 2]}, "metrics": ["sessions_created"]},
    )  # fmt: skip
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--replications", "2", "--workers", "1", "--no-progress"]
    assert cli.main([*argv, "--out", str(out)]) == 0
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 2 * 2 and set(runs["replication"]) == {0, 1}
    summary = pd.read_parquet(out / "summary.parquet")
    assert {"mean", "ci_low", "ci_high"} <= set(summary.columns)
    assert "# Sweep `cli`" in capsys.readouterr().out


@pytest.mark.req("NB-3")
def test_sweep_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = _write(tmp_path / "sweep.yaml", {"base": "missing.yaml", "grid": {}})
    assert cli.main(["sweep", str(sweep), "--no-progress"]) == 2
    assert "cannot read the file" in capsys.readouterr().err
    assert cli.main(["sweep", str(sweep), "--replications", "0"]) == 2


@pytest.mark.req("NB-3")
def test_sweep_runs_on_the_dask_scheduler_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distributed import LocalCluster

    _write(tmp_path / "base.yaml", small(duration="5m", cooldown=0, runs=[], arrivals=POISSON))
    sweep = _write(
        tmp_path / "sweep.yaml",
        {"name": "dask", "base": "base.yaml", "seed": 1, "replications": 2,
         "grid": {"config.scheduler.workers": [1, 2]}, "metrics": ["sessions_created"]},
    )  # fmt: skip
    common = [str(sweep), "--no-progress", "--workers", "1"]
    assert cli.main(["sweep", *common, "--out", str(tmp_path / "local")]) == 0
    with LocalCluster(
        processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None
    ) as cluster:
        argv = ["sweep", *common, "--dask", cluster.scheduler_address]
        assert cli.main([*argv, "--out", str(tmp_path / "dask")]) == 0
    capsys.readouterr()
    local = pd.read_parquet(tmp_path / "local" / "summary.parquet")
    remote = pd.read_parquet(tmp_path / "dask" / "summary.parquet")
    pd.testing.assert_frame_equal(local, remote)
