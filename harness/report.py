"""The demo's scenario report: one scenario through the HTTP facade, then figures and tables.

Why through the facade: the demo is the project's showcase, so its traffic takes the road a
customer's takes, every create, end and run an HTTP request to the in-process app
(``harness.runner.http_door.HttpDoor``), while the records and tables are the runner's own, the
same ``RunResult`` a sweep gets. The report is Markdown that embeds PNG figures
(``harness.figures``) and links the Parquet file of every table; the same scenario and seed give
the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from matplotlib.figure import Figure

from harness.collect import RunResult, collect
from harness.figures import (
    capacity_changes,
    credits_per_day,
    pool_over_time,
    refusals_over_time,
    save_figure,
    sessions_by_status,
    startup_waits,
)
from harness.runner import simulate
from harness.runner.http_door import HttpDoor
from harness.runner.metrics import METRICS, format_value, summarize
from harness.scenarios import Scenario
from sim.platform import Platform

__all__ = ["FIGURES", "render_report", "run_over_http", "write_report"]

#: File stem → (caption, what it draws).
FIGURES: dict[str, tuple[str, Callable[[RunResult], Figure]]] = {
    "sessions_by_status": ("Sessions by final status over time", sessions_by_status),
    "startup_waits": ("Start-up wait distribution", startup_waits),
    "pool": ("Pool utilization against capacity", pool_over_time),
    "refusals": ("Refusals by code over time", refusals_over_time),
    "credits_per_day": ("Credits per organization per day", credits_per_day),
}


def run_over_http(
    scenario: Scenario, seed: int | None = None, progress: Callable[[float], None] | None = None
) -> tuple[RunResult, int]:
    """Run ``scenario`` with every client request sent through the in-process HTTP facade;
    returns its tables and the number of HTTP requests made."""
    doors: list[HttpDoor] = []

    def door(platform: Platform) -> HttpDoor:
        doors.append(HttpDoor(platform))
        return doors[-1]

    try:
        result = collect(simulate(scenario, seed, door=door, progress=progress))
    finally:
        for made in doors:
            made.close()
    return result, sum(d.requests for d in doors)


def render_report(
    result: RunResult, scenario: Scenario, *, requests: int, scripted_day: str | None = None
) -> str:
    """The Markdown report (figures and tables referenced by relative paths)."""
    start, end = scenario.window()
    metrics = summarize(result, (start, end))
    lines = [f"# avatar-sim demo: scenario `{scenario.name}` (seed {result.seed})", ""]
    if scenario.description:
        lines += [scenario.description, ""]
    lines += [
        f"Simulated {result.duration / 3600:,.2f} h through the in-process HTTP facade "
        f"({requests:,} requests). Times are UTC.",
        "",
        "| organization | plan | keys | balance at the end (credits) |",
        "|---|---|---|---|",
    ]
    for org in result.organizations.itertuples(index=False):
        lines.append(f"| {org.organization} | {org.plan} | {org.keys} | {org.balance_credits:,} |")
    changes = capacity_changes(result.utilization)
    if changes:
        lines += [
            "",
            "Capacity events: "
            + "; ".join(f"{label} at {at:%H:%M}" for at, label in changes)
            + ".",
        ]
    lines += [
        "",
        "## Headline metrics",
        "",
        f"Clients that arrived in [{start:g} s, {end:g} s).",
        "",
    ]
    lines += ["| metric | value | unit | what it measures |", "|---|---|---|---|"]
    for name, value in metrics.items():
        spec = METRICS[name]
        lines.append(f"| {name} | {format_value(name, value)} | {spec.unit} | {spec.description} |")
    lines += ["", "## Figures", ""]
    for stem, (caption, _draw) in FIGURES.items():
        lines += [f"### {caption}", "", f"![{caption}](figures/{stem}.png)", ""]
    lines += ["## Tables", "", "Every table of the run, as Parquet:", ""]
    for name, frame in result.tables().items():
        lines.append(f"- [`tables/{name}.parquet`](tables/{name}.parquet): {len(frame):,} rows")
    if scripted_day is not None:
        lines += ["", "## The scripted day", "", f"See [{scripted_day}]({scripted_day})."]
    return "\n".join(lines) + "\n"


def write_report(
    result: RunResult,
    scenario: Scenario,
    out: Path,
    *,
    requests: int,
    scripted_day: str | None = None,
) -> list[Path]:
    """Write ``report.md``, ``figures/*.png`` and ``tables/*.parquet`` under ``out``."""
    figures, tables = out / "figures", out / "tables"
    figures.mkdir(parents=True, exist_ok=True)
    written = [
        save_figure(draw(result), figures / f"{stem}.png")
        for stem, (_caption, draw) in FIGURES.items()
    ]
    written += result.write_parquet(tables)
    report = out / "report.md"
    report.write_text(
        render_report(result, scenario, requests=requests, scripted_day=scripted_day),
        encoding="utf-8",
    )
    return [report, *written]
