"""``avatar-sim demo``'s report: the default scenario through the facade, its figures, its tables.

The full default scenario runs once (it is what ``make demo`` shows); the byte-for-byte checks
run the command twice on a small scenario, to stay fast.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
import yaml

from harness import cli
from harness.examples import example
from harness.runner import run_scenario
from harness.runner.figures import check_figure
from harness.runner.report import FIGURES, run_over_http, view_of
from harness.runner.tables import TABLES
from harness.scenarios import load_scenario, parse_scenario
from tests.scenarios.helpers import small

matplotlib.use("Agg")


@pytest.mark.req("NB-2", "SIM-9", "SIM-7", "NB-8", "NB-9")
def test_the_demo_writes_a_report_with_figures_and_every_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert cli.main(["demo", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"Report: {out / 'report.md'}" in printed
    report = (out / "report.md").read_text(encoding="utf-8")
    for stem in FIGURES:
        assert f"](figures/{stem}.png)" in report
        assert (out / "figures" / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in TABLES:
        frame = pd.read_parquet(out / "tables" / f"{name}.parquet")
        assert f"tables/{name}.parquet" in report
        if name in ("sessions", "api_calls", "utilization", "usage_daily"):
            assert len(frame) > 0, name
    sessions = pd.read_parquet(out / "tables" / "sessions.parquet")
    assert len(sessions) > 300 and set(sessions["organization"]) >= {"Acme Studios", "Delta Labs"}
    # The capacity loss shows: a fall in capacity, and sessions that failed no_capacity.
    utilization = pd.read_parquet(out / "tables" / "utilization.parquet")
    assert utilization["capacity"].min() < utilization["capacity"].max()
    assert (sessions["error_code"] == "no_capacity").any()
    # Every scenario event is named (and marked on the figures), the burst too.
    assert "burst of 30 (Acme Studios) at 10:00 until 10:03" in report
    assert "capacity loss to 4 workers at 14:00 until 14:40" in report
    # The scenario's description says what happens, and only that: each code it names occurs,
    # and each code that occurs is named.
    description = load_scenario(example("scenarios", "default.yaml")).description
    calls = pd.read_parquet(out / "tables" / "api_calls.parquet")
    happened = set(sessions["error_code"].dropna()) | set(calls["outcome"].astype(str))
    for code in ("no_capacity", "at_capacity", "concurrent_sessions", "insufficient_credits",
                 "rate_limited"):  # fmt: skip
        assert (f"`{code}`" in description) == (code in happened), code
    # The limits that held load back are said out loud.
    assert "## Warnings" in report and "Concurrency caps refused" in report
    assert re.search(r"through the in-process HTTP facade \(\d[\d,]* requests\)", report)
    assert (out / "summary.md").is_file()  # the scripted day is still there


@pytest.mark.req("NB-2")
def test_every_report_figure_is_labelled() -> None:
    scenario = load_scenario(example("scenarios", "default.yaml"))
    result = run_scenario(scenario)
    for stem, (_caption, draw) in FIGURES.items():
        figure = draw(result, view_of(scenario))
        assert check_figure(figure) == [], stem


@pytest.mark.req("SIM-7")
def test_the_facade_door_gives_the_tables_of_the_python_door() -> None:
    """Without retries (whose Retry-After the header rounds to whole seconds) both doors give
    the same sessions, calls and ledger. Only HTTP has a Retry-After on every 429 (LIM-4)."""
    scenario = parse_scenario(small(client={"max_attempts": 1}, runs=[]))
    direct = run_scenario(scenario)
    over_http, requests = run_over_http(scenario)
    assert requests > 0
    for name in ("sessions", "ledger", "utilization", "clients"):
        pd.testing.assert_frame_equal(getattr(direct, name), getattr(over_http, name), obj=name)
    calls, http_calls = direct.api_calls, over_http.api_calls
    pd.testing.assert_frame_equal(
        calls.drop(columns="retry_after"), http_calls.drop(columns="retry_after")
    )
    differs = calls["retry_after"].isna() != http_calls["retry_after"].isna()
    assert (http_calls.loc[differs, "error_type"] == "quota_exceeded").all()


@pytest.mark.req("SIM-2")
def test_the_report_is_byte_identical_per_seed(tmp_path: Path) -> None:
    scenario = tmp_path / "small.yaml"
    scenario.write_text(yaml.safe_dump(small(duration="10m", cooldown="2m")), encoding="utf-8")
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        argv = ["demo", "--out", str(out), "--scenario", str(scenario), "--no-progress"]
        assert cli.main(argv) == 0
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert Path("report.md") in files and Path("figures/pool.png") in files
    for name in files:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


@pytest.mark.req("NB-1")
def test_a_bad_scenario_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration: 1h1h\norganizations: []\n", encoding="utf-8")
    assert cli.main(["demo", "--out", str(tmp_path / "o"), "--scenario", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: duration:" in err and f"{bad}:2: organizations:" in err
    assert not (tmp_path / "o").exists()
