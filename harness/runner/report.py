"""A run's report: Markdown that embeds its figures and links the Parquet file of every table.

``avatar-sim demo`` writes it for the default scenario run through the HTTP facade, every create,
end and run an HTTP request to the in-process app (``harness.runner.http_door.HttpDoor``), and
``avatar-sim run`` for any scenario it runs. The records and tables are the runner's own, the
same ``RunResult`` a sweep gets; the figures (``harness.runner.figures``) read only the aggregate
tables, so a ``records: summary`` run gets the same report. The report states the measured
window, the rule each metric counts by, and any limit that held the load back from the pool
(``harness.runner.binding``); the same scenario and seed give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypedDict, Unpack

import pandas as pd
from matplotlib.figure import Figure

from harness.runner import simulate
from harness.runner.figures import (
    View,
    credits_per_day,
    pool_over_time,
    refusals_over_time,
    save_figure,
    scenario_marks,
    sessions_by_status,
    startup_waits,
)
from harness.runner.http_door import HttpDoor
from harness.runner.metrics import metrics_table, summarize, window_text
from harness.runner.tables import RunResult, collect
from harness.scenarios import Scenario
from harness.target import Target
from sim.platform import Platform

__all__ = [
    "FIGURES",
    "ReportWords",
    "render_report",
    "run_over_http",
    "view_of",
    "write_report",
]

#: File stem → (caption, what it draws).
FIGURES: dict[str, tuple[str, Callable[[RunResult, View], Figure]]] = {
    "sessions_by_status": ("Sessions by final status over time", sessions_by_status),
    "startup_waits": ("The two start-up waits", startup_waits),
    "pool": ("The pool: busy workers and queued jobs against capacity", pool_over_time),
    "refusals": ("Refusals by code over time", refusals_over_time),
    "credits_per_day": (
        "Credits per organization per day",
        lambda result, _view: credits_per_day(result),
    ),
}


def view_of(scenario: Scenario) -> View:
    """The figures' view of a run of ``scenario``: its events marked, its measured window."""
    return View(marks=scenario_marks(scenario), window=scenario.window())


def run_over_http(
    scenario: Scenario, seed: int | None = None, progress: Callable[[float], None] | None = None
) -> tuple[RunResult, int]:
    """Run ``scenario`` with every client request sent through the in-process HTTP facade;
    returns its tables and the number of HTTP requests made."""
    doors: list[HttpDoor] = []

    def door(platform: Platform) -> HttpDoor:
        doors.append(HttpDoor(Target.in_process(platform)))
        return doors[-1]

    try:
        result = collect(simulate(scenario, seed, door=door, progress=progress))
    finally:
        for made in doors:
            made.close()
    return result, sum(d.requests for d in doors)


def render_report(
    result: RunResult,
    scenario: Scenario,
    *,
    requests: int | None = None,
    scripted_day: str | None = None,
    warnings: Sequence[str] = (),
    title: str = "avatar-sim run",
    tables: str = "tables",
) -> str:
    """The Markdown report (figures, and the tables in ``tables``, by relative paths)."""
    window = scenario.window()
    metrics = summarize(result, window)
    lines = [f"# {title}: scenario `{scenario.name}` (seed {result.seed})", ""]
    if scenario.description:
        lines += [scenario.description, ""]
    how = (
        f"through the in-process HTTP facade ({requests:,} requests)"
        if requests is not None
        else f"in process, keeping `{result.records}` records"
    )
    lines += [f"Simulated {result.duration / 3600:,.2f} h {how}. Times are UTC.", ""]
    lines += ["| organization | plan | keys | balance at the end (credits) |", "|---|---|---|---|"]
    for org in result.organizations.itertuples(index=False):
        lines.append(f"| {org.organization} | {org.plan} | {org.keys} | {org.balance_credits:,} |")
    marks = scenario_marks(scenario)
    if marks:
        epoch = result.intervals["at"].iloc[0]
        events = []
        for mark in marks:
            at = epoch + pd.Timedelta(seconds=mark.at)
            span = f" until {epoch + pd.Timedelta(seconds=mark.until):%H:%M}" if mark.until else ""
            events.append(f"{mark.label} at {at:%H:%M}{span}")
        lines += ["", "Scenario events (marked on every time axis): " + "; ".join(events) + "."]
    if warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {warning}" for warning in warnings]
    lines += ["", "## Headline metrics", "", window_text(window, result.duration), ""]
    lines += metrics_table(metrics)
    lines += ["", "## Figures", ""]
    for stem, (caption, _draw) in FIGURES.items():
        lines += [f"### {caption}", "", f"![{caption}](figures/{stem}.png)", ""]
    lines += ["## Tables", "", "Every table of the run, as Parquet:", ""]
    for name, frame in result.tables().items():
        path = f"{tables}/{name}.parquet" if tables else f"{name}.parquet"
        lines.append(f"- [`{path}`]({path}): {len(frame):,} rows")
    if scripted_day is not None:
        lines += ["", "## The scripted day", "", f"See [{scripted_day}]({scripted_day})."]
    return "\n".join(lines) + "\n"


class ReportWords(TypedDict, total=False):
    """What ``render_report`` is told beyond the run, which ``write_report`` passes on."""

    requests: int | None
    scripted_day: str | None
    warnings: Sequence[str]
    title: str


def write_report(
    result: RunResult,
    scenario: Scenario,
    out: Path,
    *,
    tables: str = "tables",
    **words: Unpack[ReportWords],
) -> list[Path]:
    """Write ``report.md`` (``render_report`` told ``words``), ``figures/*.png`` and every
    table as ``<tables>/<name>.parquet`` under ``out`` (``tables=""``: beside the report)."""
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    view = view_of(scenario)
    written = [
        save_figure(draw(result, view), figures / f"{stem}.png")
        for stem, (_caption, draw) in FIGURES.items()
    ]
    written += result.write_parquet(out / tables if tables else out)
    report = out / "report.md"
    report.write_text(render_report(result, scenario, tables=tables, **words), encoding="utf-8")
    return [report, *written]
