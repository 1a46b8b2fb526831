"""Numbers an analyst can trust at a glance (NB-7, NB-8, NB-9).

- One definition per metric: the summary, the report's table and its figures, and a summary
  run all show the same number for a metric, each naming its window; the two waits are apart.
- A limit other than the pool that refused clients is said out loud by ``run`` and ``sweep``,
  and refusals are split by cause.
- Figures mark every scenario event and show each sampling interval's peaks.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
import pytest
import yaml

from harness import cli
from harness.runner import run_scenario
from harness.runner.binding import binding_limits, concurrency_ceiling
from harness.runner.figures import (
    View,
    pool_over_time,
    scenario_marks,
    sessions_by_status,
    startup_waits,
)
from harness.runner.metrics import METRICS, format_value, summarize, summary_markdown
from harness.runner.report import FIGURES, view_of
from harness.runner.tables import RunResult
from harness.runner.waits import WAIT_EDGES
from harness.scenarios import parse_scenario
from tests.scenarios.helpers import small

matplotlib.use("Agg")


def _write(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _busy(**overrides: Any) -> dict[str, Any]:
    """Two workers, a queue of one: waits, no_capacity and at_capacity all happen."""
    data = small(config={"scheduler": {"workers": 2, "max_queue_length": 1}}, cooldown="1h")
    data.update(overrides)
    return data


@pytest.fixture(scope="module")
def busy() -> tuple[Any, RunResult]:
    scenario = parse_scenario(_busy(warmup="2m", measure="16m"))
    return scenario, run_scenario(scenario)


@pytest.mark.req("NB-7")
def test_the_percentiles_are_the_upper_edge_of_their_histogram_bin(
    busy: tuple[Any, RunResult],
) -> None:
    scenario, result = busy
    window = scenario.window()
    metrics = summarize(result, window)
    created = (result.sessions["created_at"] - result.intervals["at"].iloc[0]).dt.total_seconds()
    sessions = result.sessions[(created >= window[0]) & (created < window[1])]
    edges = np.asarray(WAIT_EDGES)
    for kind in ("placement", "first_frame"):
        waits = sessions[f"{kind}_wait_seconds"].dropna().to_numpy()
        exact = float(np.quantile(waits, 0.95, method="inverted_cdf"))
        reported = metrics[f"p95_{kind}_wait_seconds"]
        assert reported in WAIT_EDGES
        below = edges[np.searchsorted(edges, reported) - 1] if reported > 0 else 0.0
        assert below <= exact <= reported  # never below the exact one, at most a bin above
    assert metrics["p95_first_frame_wait_seconds"] > metrics["p95_placement_wait_seconds"]


@pytest.mark.req("NB-7", "NB-9")
def test_the_summary_the_report_and_the_figures_show_one_number_per_metric(
    busy: tuple[Any, RunResult],
) -> None:
    scenario, result = busy
    window = scenario.window()
    metrics = summarize(result, window)
    summary = summary_markdown(result, window)
    for name in ("p95_placement_wait_seconds", "p95_first_frame_wait_seconds", "mean_utilization"):
        assert f"| {name} | {format_value(name, metrics[name])} |" in summary
    assert "Measured window [120 s, 1080 s)" in summary
    view = view_of(scenario)
    waits = startup_waits(result, view)
    labels = waits.axes[0].get_legend_handles_labels()[1]
    for kind in ("placement", "first_frame"):
        value = metrics[f"p95_{kind}_wait_seconds"]
        assert f"p95_{kind}_wait_seconds = {value:,.2f} s" in labels
    assert "created in [0.0333333 h, 0.3 h)" in waits.axes[0].get_title()
    pool = pool_over_time(result, view)
    title = pool.axes[0].get_title()
    assert f"mean_utilization {metrics['mean_utilization']:.1%} over [0.0333333 h, 0.3 h)" in title
    # The pool's table holds the definition: busy worker-seconds over pool worker-seconds.
    rows = result.utilization[(result.utilization["t"] >= 120) & (result.utilization["t"] < 1080)]
    assert metrics["mean_utilization"] == pytest.approx(
        rows["busy_seconds"].sum() / rows["worker_seconds"].sum()
    )
    # A summary run of the same scenario and seed shows the same numbers.
    summary_run = run_scenario(parse_scenario(_busy(warmup="2m", measure="16m", records="summary")))
    again = summarize(summary_run, window)
    for name in METRICS:
        if name != "credits_charged":  # by UTC day: the window cuts the day
            assert again[name] == pytest.approx(metrics[name], nan_ok=True), name


@pytest.mark.req("NB-8")
def test_refusals_are_split_by_cause_and_add_up(busy: tuple[Any, RunResult]) -> None:
    _scenario, result = busy
    metrics = summarize(result)
    causes = ("capacity", "caps", "rate_limit", "credits", "other")
    assert sum(metrics[f"refused_{c}"] for c in causes) == metrics["refused_clients"]
    outcomes = result.clients[result.clients["kind"] == "session"]["final_outcome"].astype(str)
    assert metrics["refused_capacity"] == (outcomes == "at_capacity").sum()
    assert metrics["refused_caps"] == (outcomes == "concurrent_sessions").sum()
    assert "refused_rate" not in metrics
    text = summary_markdown(result)
    assert "## Session clients refused, by cause" in text
    assert "| caps | `concurrent_sessions` |" in text


@pytest.mark.req("NB-8")
def test_run_warns_when_caps_hold_the_load_back_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One key per organization and the seed's per-key cap of 1: at most 2 sessions at once,
    # however many workers there are.
    data = small(
        config={"scheduler": {"workers": 8}},
        organizations=[{"name": "Acme", "plan": "pro", "keys": 1},
                       {"name": "Bistro", "plan": "pro", "keys": 1}],
        arrivals=[{"kind": "poisson", "rate_per_hour": 120}],
        runs=[],
    )  # fmt: skip
    scenario = parse_scenario(data)
    assert concurrency_ceiling(scenario) == 2
    path = _write(tmp_path / "s.yaml", data)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: Concurrency caps refused" in err
    assert "at most 2 sessions at once" in err and "up to 8 workers" in err
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "## Warnings" in summary and "Concurrency caps refused" in summary
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "Concurrency caps refused" in report
    for stem in FIGURES:
        assert (out / "figures" / f"{stem}.png").is_file()
        assert f"](figures/{stem}.png)" in report
    assert "](sessions.parquet)" in report and (out / "sessions.parquet").is_file()
    bare = tmp_path / "bare"
    assert cli.main(["run", str(path), "--out", str(bare), "--no-figures"]) == 0
    assert (bare / "summary.md").is_file() and not (bare / "report.md").exists()
    # Without the caps nothing is said.
    free = small(limits={"concurrency": "off"}, config={"scheduler": {"workers": 8}}, runs=[])
    result = run_scenario(parse_scenario(free))
    assert binding_limits(parse_scenario(free), summarize(result)) == []


@pytest.mark.req("NB-8")
def test_a_sweep_over_workers_that_caps_hold_flat_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case that came out flat: per-key caps hold concurrency at 3 while the sweep adds
    workers; every point says so."""
    base = small(
        duration="10m", cooldown="2m", runs=[], usage_timezones=["UTC"],
        organizations=[{"name": "Acme", "plan": "enterprise", "keys": 3}],
        arrivals=[{"kind": "poisson", "rate_per_hour": 240}],
    )  # fmt: skip
    _write(tmp_path / "base.yaml", base)
    sweep = _write(
        tmp_path / "sweep.yaml",
        {"name": "flat", "base": "base.yaml", "seed": 1, "replications": 2,
         "grid": {"config.scheduler.workers": [3, 6]}, "metrics": ["mean_utilization"]},
    )  # fmt: skip
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--workers", "1", "--no-progress", "--out", str(out)]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    for point in ("point 0 (config.scheduler.workers=3)", "point 1 (config.scheduler.workers=6)"):
        assert f"warning: {point}: Concurrency caps refused" in err
    assert "at most 3 sessions at once" in err
    assert "## Warnings" in (out / "summary.md").read_text(encoding="utf-8")


@pytest.mark.req("NB-9")
def test_every_scenario_event_is_marked_on_the_time_axes() -> None:
    data = small(
        duration="30m",
        arrivals=[
            {"kind": "poisson", "rate_per_hour": 40, "start": "2m", "end": "25m"},
            {"kind": "burst", "organization": "Acme", "at": "10m", "count": 5, "within": "1m"},
        ],
        faults=[{"kind": "capacity", "at": "15m", "workers": 1, "until": "20m"}],
    )
    scenario = parse_scenario(data)
    marks = scenario_marks(scenario)
    labels = {m.label for m in marks}
    assert labels == {"arrivals start", "arrivals stop", "burst of 5 (Acme)",
                      "capacity loss to 1 workers"}  # fmt: skip
    result = run_scenario(scenario)
    view = view_of(scenario)
    for stem in ("sessions_by_status", "pool", "refusals"):
        figure = FIGURES[stem][1](result, view)
        shown = set(figure.axes[0].get_legend_handles_labels()[1])
        assert labels <= shown, stem
    # Without a view, nothing is made up.
    shown = set(sessions_by_status(result, View()).axes[0].get_legend_handles_labels()[1])
    assert not labels & shown


@pytest.mark.req("NB-9")
def test_a_short_queue_spike_between_samples_shows_as_the_interval_maximum() -> None:
    """A flash crowd of 20 within 30 s on 2 workers, sampled every 5 minutes: the jobs that
    queued are gone (placed or failed) by the next sample, but the interval's maximum keeps
    them, and the pool figure draws it."""
    data = small(
        duration="20m",
        sample_every="5m",
        config={"scheduler": {"workers": 2, "max_queue_length": 30}},
        limits={"concurrency": "off", "rate": "off"},
        arrivals=[{"kind": "burst", "organization": "Acme", "at": "6m", "count": 20,
                   "within": "30s"}],
        runs=[],
        sessions={"length": {"kind": "constant", "value": 20}},
    )  # fmt: skip
    result = run_scenario(parse_scenario(data))
    util = result.utilization
    assert util["queued"].max() == 0  # no snapshot catches it
    assert util["queued_max"].max() >= 10
    spike = util.loc[util["queued_max"].idxmax(), "t"]
    assert spike == 300.0  # the interval [5 min, 10 min) that holds the burst
    figure = pool_over_time(result)
    lines = {line.get_label(): line for line in figure.axes[0].get_lines()}
    drawn = lines["queued jobs (interval max)"].get_ydata()
    assert max(drawn) == util["queued_max"].max()  # type: ignore[arg-type]
    assert not math.isnan(float(util["utilization"].iloc[1]))
    assert isinstance(util, pd.DataFrame)
