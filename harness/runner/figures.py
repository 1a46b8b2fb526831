"""Figures of runs and sweeps, shared by the demo's report and the notebooks.

Why one module: a figure is read without its code, so each one carries everything a reader needs
to trust it: a title, axis labels with units (and the timezone of a time axis), integer ticks
where it counts things, a legend for every series, markers for every event of the scenario that
explains a change (a burst, capacity lost and restored, arrivals starting or stopping: ``Mark``,
``scenario_marks``; a balance exhausted) and, when it shows intervals, how many replications
they pool and which method computed them. A figure that shows a metric shows it as the metric
is defined (``harness.runner.metrics``), over the window it names. ``check_figure`` states
those rules as code; the demo's test and the notebooks' test run it on every figure they draw.

Every function takes the harness's DataFrames (never live simulator objects; the figures of a
run read its aggregate tables, which every records level keeps) and returns a matplotlib
``Figure``; nothing here picks a backend, so the notebooks show figures inline and the demo
renders them to PNG with Agg.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.runner.metrics import (
    epoch_of,
    format_value,
    pool_utilization,
    summarize,
    wait_counts,
)
from harness.runner.tables import RunResult
from harness.runner.waits import WAIT_EDGES, quantile
from harness.scenarios.model import Scenario
from harness.scenarios.parts import Burst, Poisson
from harness.sweep.aggregate import CONFIDENCE, METHOD_LABELS

__all__ = [
    "Mark",
    "View",
    "balance_over_time",
    "capacity_changes",
    "check_figure",
    "credits_per_day",
    "daily_credits_by_timezone",
    "mark_events",
    "pool_over_time",
    "refusals_over_time",
    "save_figure",
    "scenario_marks",
    "sessions_by_status",
    "stacked_totals",
    "startup_waits",
    "sweep_figure",
    "time_axis",
]

_CAPACITY_LOST = "capacity lost"
_CAPACITY_BACK = "capacity restored"
#: A mark's kind → its colour and line style.
_MARK_STYLE: dict[str, tuple[str, str]] = {
    "burst": ("tab:purple", "-."),
    "capacity": ("tab:red", "--"),
    "arrivals": ("tab:gray", ":"),
}


@dataclass(frozen=True, slots=True)
class Mark:
    """A scenario event a time axis marks: a line at ``at`` (simulated seconds), shaded until
    ``until`` when it lasts; ``kind`` picks its style (``burst``, ``capacity``, ``arrivals``)."""

    at: float
    label: str
    kind: str
    until: float | None = None


@dataclass(frozen=True, slots=True)
class View:
    """What every figure of one run's report shares: the scenario's events to mark, the
    measured window (simulated seconds) and the timezone of its time axes."""

    marks: tuple[Mark, ...] = ()
    window: tuple[float, float] | None = None
    timezone: str = "UTC"


def scenario_marks(scenario: Scenario) -> tuple[Mark, ...]:
    """Every event of ``scenario`` a reader should see on a time axis: each burst, each
    capacity fault (and its end) and each arrival process that starts or stops mid-run."""
    marks: list[Mark] = []
    for arrival in scenario.arrivals:
        who = f" ({arrival.organization})" if arrival.organization else ""
        if isinstance(arrival, Burst):
            until = arrival.at + arrival.within if arrival.within > 0 else None
            marks.append(Mark(arrival.at, f"burst of {arrival.count}{who}", "burst", until))
        elif isinstance(arrival, Poisson):
            if arrival.start > 0:
                marks.append(Mark(arrival.start, f"arrivals start{who}", "arrivals"))
            if arrival.end is not None and arrival.end < scenario.duration:
                marks.append(Mark(arrival.end, f"arrivals stop{who}", "arrivals"))
    for fault in scenario.faults:
        label = f"capacity loss to {fault.workers} workers"
        marks.append(Mark(fault.at, label, "capacity", fault.until))
    return tuple(sorted(marks, key=lambda m: m.at))


def _new(width: float = 9.0, height: float = 3.6) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def time_axis(ax: Axes, timezone: str) -> None:
    locator = mdates.AutoDateLocator(tz=timezone)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    formatter = mdates.ConciseDateFormatter(locator, tz=timezone)  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_formatter(formatter)
    ax.set_xlabel(f"time ({timezone})")


def _counts(ax: Axes, label: str) -> None:
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(label)


def _local(times: pd.Series, timezone: str) -> pd.Series:
    return cast(pd.Series, times.dt.tz_convert(timezone))


def _x(moment: pd.Timestamp) -> float:
    """A position on a date axis (matplotlib's days since its epoch)."""
    return float(mdates.date2num(moment.to_pydatetime()))  # type: ignore[no-untyped-call]


def capacity_changes(utilization: pd.DataFrame) -> list[tuple[pd.Timestamp, str]]:
    """The samples at which the pool's intended size had fallen (capacity lost) or risen back
    (restored) since the previous one."""
    capacity = utilization["capacity"]
    changes = []
    for index in range(1, len(utilization)):
        before, after = capacity.iloc[index - 1], capacity.iloc[index]
        if after != before:
            label = _CAPACITY_LOST if after < before else _CAPACITY_BACK
            changes.append((utilization["at"].iloc[index], label))
    return changes


def mark_events(ax: Axes, marks: Sequence[Mark], epoch: pd.Timestamp) -> None:
    """A line at each mark (shaded while it lasts), labelled once per label."""
    seen: set[str] = set()
    for mark in marks:
        colour, style = _MARK_STYLE.get(mark.kind, ("black", ":"))
        label = mark.label if mark.label not in seen else None
        seen.add(mark.label)
        start = _x(epoch + pd.Timedelta(seconds=mark.at))
        ax.axvline(start, color=colour, linestyle=style, linewidth=1, label=label)
        if mark.until is not None:
            end = _x(epoch + pd.Timedelta(seconds=mark.until))
            ax.axvspan(start, end, color=colour, alpha=0.08)


def _window_words(window: tuple[float, float] | None) -> str:
    if window is None:
        return "the whole run"
    start, end = window
    return f"[{start / 3600:g} h, {end / 3600:g} h)"


def _binned(frame: pd.DataFrame, columns: Sequence[str], every: str) -> pd.DataFrame:
    """``columns`` of a per-interval table summed into bins of ``every`` (its ``at`` floored)."""
    if frame.empty:
        return pd.DataFrame(columns=list(columns))
    bins = frame["at"].dt.floor(every)
    return frame.groupby(bins)[list(columns)].sum()


def _stacked_bars(ax: Axes, table: pd.DataFrame, every: str, timezone: str) -> None:
    width = pd.Timedelta(every) / pd.Timedelta(days=1)  # date axes count in days
    bottom = None
    at = _local(pd.Series(table.index), timezone)
    for column in table.columns:
        values = table[column].to_numpy()
        ax.bar(at, values, width=width, bottom=bottom, label=str(column), align="edge")
        bottom = values if bottom is None else bottom + values


def _stacked_over_time(
    result: RunResult,
    view: View,
    table: pd.DataFrame,
    every: str,
    *,
    counted: str,
    empty: str,
    title: str,
) -> Figure:
    """``table`` (``counted`` per bin of ``every``, a column each) as stacked bars on the run's
    time axis with the scenario's marks; ``empty`` labels a figure with nothing to stack."""
    figure, ax = _new()
    if table.size:
        _stacked_bars(ax, table, every, view.timezone)
    else:
        ax.plot([], [], label=empty)
    mark_events(ax, view.marks, epoch_of(result))
    time_axis(ax, view.timezone)
    _counts(ax, f"{counted} per {every}")
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=2)
    return figure


def sessions_by_status(result: RunResult, view: View = View(), *, every: str = "10min") -> Figure:
    """Sessions created per interval, stacked by the status they ended in (``intervals``: the
    same at every records level)."""
    intervals = result.intervals.copy()
    finished = intervals[["sessions_ended", "sessions_failed", "sessions_canceled"]].sum(axis=1)
    intervals["not finished"] = intervals["sessions_created"] - finished
    columns = {"sessions_ended": "ended", "sessions_failed": "failed",
               "sessions_canceled": "canceled", "not finished": "not finished"}  # fmt: skip
    table = _binned(intervals, list(columns), every).rename(columns=columns)
    table = table.loc[:, (table != 0).any()] if len(table) else table
    total = int(result.intervals["sessions_created"].sum())
    return _stacked_over_time(
        result,
        view,
        table,
        every,
        counted="sessions created",
        empty="no sessions",
        title=f"Sessions created, by final status (n = {total:,} sessions)",
    )


def startup_waits(result: RunResult, view: View = View()) -> Figure:
    """Both start-up waits of the sessions created in the measured window, as cumulative
    shares, with their 95th percentiles as the metrics define them (``harness.runner.waits``): the
    placement wait (created → a worker takes it) and the first-frame wait (created → first
    frame), and how many sessions failed ``no_capacity`` instead."""
    counts = wait_counts(result, view.window)
    metrics = summarize(result, view.window)
    figure, ax = _new(7.0, 3.8)
    edges = np.asarray(WAIT_EDGES)
    finite = edges[:-1]
    top = 5.0
    names = {"placement": "placement wait (created → placed)",
             "first_frame": "first-frame wait (created → first frame)"}  # fmt: skip
    for kind, label in names.items():
        values = None if counts is None else counts[kind]
        total = 0 if values is None else int(values.sum())
        if values is None or total == 0:
            ax.plot([], [], label=f"{label}: no sessions")
            continue
        share = np.cumsum(values)[:-1] / total
        p95 = quantile(values, 0.95)
        top = max(top, min(quantile(values, 0.995) * 1.2, 600.0))
        line = ax.step(finite, share, where="post", label=f"{label} (n = {total:,})")
        ax.axvline(p95, color=line[0].get_color(), linestyle=":", linewidth=1,
                   label=f"p95_{kind}_wait_seconds = {p95:,.2f} s")  # fmt: skip
    ax.set_xlim(0, top)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("wait (s)")
    ax.set_ylabel("share of sessions waiting at most this long")
    failed = metrics["no_capacity"]
    ax.set_title(
        f"Start-up waits of sessions created in {_window_words(view.window)}; "
        f"{format_value('no_capacity', failed)} more failed no_capacity",
        fontsize=10,
    )
    ax.legend(fontsize=7, loc="lower right")
    return figure


def pool_over_time(result: RunResult, view: View = View(), *, title: str = "") -> Figure:
    """The pool per sampling interval: its intended size, its mean busy workers, and the most
    busy workers and queued jobs at any instant of the interval (from the pool's meter, so a
    spike between two samples shows)."""
    util = result.utilization
    at = _local(util["at"], view.timezone)
    every = float(util["t"].iloc[1] - util["t"].iloc[0]) if len(util) > 1 else math.nan
    figure, ax = _new()
    ax.step(at, util["capacity"], where="post", color="grey", linestyle=":", label="capacity")
    mean_busy = util["busy_seconds"] / every if every == every else util["busy"]
    ax.step(at, mean_busy, where="post", label="busy workers (interval mean)")
    ax.step(at, util["busy_max"], where="post", alpha=0.6, label="busy workers (interval max)")
    ax.step(at, util["queued_max"], where="post", label="queued jobs (interval max)")
    mark_events(ax, view.marks, epoch_of(result))
    time_axis(ax, view.timezone)
    ax.set_ylabel("workers or jobs")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    utilization = pool_utilization(result, view.window)
    ax.set_title(
        title
        or f"Worker pool: mean_utilization {utilization:.1%} over {_window_words(view.window)}"
        f"\n(busy / pool worker-seconds; {len(util):,} intervals of {every / 60:g} min)",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    return figure


def refusals_over_time(result: RunResult, view: View = View(), *, every: str = "10min") -> Figure:
    """Refused requests per interval, stacked by error code (``requests``: the same at every
    records level)."""
    requests = result.requests
    refused = requests[~requests["outcome"].isin(["ok", "replayed"])]
    table = (
        refused.assign(bin=refused["at"].dt.floor(every), outcome=refused["outcome"].astype(str))
        .pivot_table(index="bin", columns="outcome", values="requests", aggfunc="sum")
        .fillna(0)
    )
    total, count = int(requests["requests"].sum()), int(refused["requests"].sum())
    return _stacked_over_time(
        result,
        view,
        table,
        every,
        counted="refused requests",
        empty="none",
        title=f"Refusals by code (n = {count:,} of {total:,} requests)",
    )


def credits_per_day(result: RunResult, *, timezone: str = "UTC") -> Figure:
    """Credits per organization per day, as ``GET /v1/usage`` bucketed them in ``timezone``."""
    daily = result.usage_daily[result.usage_daily["timezone"] == timezone]
    table = daily.pivot_table(
        index="day", columns="organization", values="credits", aggfunc="sum"
    ).fillna(0)
    figure, ax = _new(7.0, 3.6)
    table.plot.bar(ax=ax, rot=0)
    ax.set_xlabel(f"day ({timezone})")
    _counts(ax, "credits")
    ax.set_title("Credits per organization per day (GET /v1/usage)")
    ax.legend(fontsize=8)
    return figure


def stacked_totals(table: pd.DataFrame, *, title: str, xlabel: str, ylabel: str) -> Figure:
    """One horizontal stacked bar per row of ``table`` (e.g. credits by surface per org)."""
    figure, ax = _new(7.0, 0.6 * len(table) + 1.8)
    table.plot.barh(stacked=True, ax=ax)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7, ncols=2)
    return figure


def daily_credits_by_timezone(daily: pd.DataFrame) -> Figure:
    """Credits per calendar day, one line per timezone column of ``daily`` (index: the day)."""
    figure, ax = _new(10.0, 3.4)
    for zone in daily.columns:
        ax.plot(pd.to_datetime(daily.index), daily[zone], drawstyle="steps-mid", label=str(zone))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))  # type: ignore[no-untyped-call]
    ax.set_xlabel("day (local calendar date of each timezone)")
    _counts(ax, "credits per day")
    ax.set_title(f"Credits per day, all organizations ({len(daily):,} days)")
    ax.legend(fontsize=8)
    return figure


def balance_over_time(
    ledger: pd.DataFrame,
    organizations: pd.DataFrame,
    *,
    low_balance: pd.DataFrame,
    exhausted: Mapping[str, pd.Timestamp],
    timezone: str = "UTC",
) -> Figure:
    """Each organization's balance (a running sum of its ledger's pool changes), its plan's
    low-balance threshold, the ``billing.low_balance`` event and the moment it ran out."""
    names = list(organizations["organization"])
    figure = Figure(figsize=(10.0, 2.5 * len(names) + 0.5), layout="constrained")
    axes = figure.subplots(len(names), 1, sharex=True, squeeze=False)[:, 0]
    plans = organizations.set_index("organization")
    for ax, name in zip(axes, names, strict=True):
        rows = ledger[ledger["organization"] == name]
        ax.step(_local(rows["at"], timezone), rows["balance"], where="post", label="balance")
        threshold = plans.loc[name, "low_balance_threshold_credits"]
        ax.axhline(threshold, color="tab:red", linestyle=":", label="low-balance threshold")
        for at in low_balance.loc[low_balance["organization"] == name, "at"]:
            ax.axvline(_x(at), color="tab:orange", label="billing.low_balance")
        if name in exhausted:
            ax.axvline(
                _x(exhausted[name]), color="black", linestyle="--", label="balance exhausted"
            )
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(title=f"{name} ({plans.loc[name, 'plan']} plan)", ylabel="credits")
        time_axis(ax, timezone)
        ax.legend(fontsize=7, loc="upper right")
    figure.suptitle("Balance over the month")
    return figure


def sweep_figure(
    wide: pd.DataFrame,
    *,
    x: str,
    metric: str,
    xlabel: str,
    ylabel: str,
    title: str,
    group: str | None = None,
    group_label: str = "",
    theory: str | None = None,
    theory_label: str = "theory",
    ax: Axes | None = None,
) -> Figure:
    """A sweep metric against a parameter with its 95 % interval (from ``SweepResult.wide()``),
    optionally one series per value of ``group`` and a theory column drawn as a dashed line.
    The title states the number of replications and the interval's method."""
    if ax is None:
        figure, ax = _new(6.0, 3.8)
    else:
        figure = ax.get_figure()  # type: ignore[assignment]
    groups: Sequence[tuple[Any, pd.DataFrame]] = (
        list(wide.groupby(group)) if group is not None else [(None, wide)]
    )
    for value, rows in groups:
        rows = rows.sort_values(x)
        mean = rows[f"{metric}_mean"]
        low = rows[f"{metric}_ci_low"].fillna(mean)
        high = rows[f"{metric}_ci_high"].fillna(mean)
        suffix = "" if value is None else f", {group_label}{value:g}"
        ax.errorbar(
            rows[x], mean, yerr=[mean - low, high - mean], fmt="o", capsize=3,
            label=f"simulated{suffix}",
        )  # fmt: skip
        if theory is not None:
            ax.plot(rows[x], rows[theory], "--", label=f"{theory_label}{suffix}")
    methods = sorted(set(wide[f"{metric}_method"]))
    replications = sorted({int(n) for n in wide[f"{metric}_n"]})
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel=xlabel, ylabel=ylabel)
    method_text = "; ".join(METHOD_LABELS[m] for m in methods)
    counts = ", ".join(map(str, replications))
    ax.set_title(
        f"{title}\n{CONFIDENCE:.0%} {method_text}, n = {counts} replications per point",
        fontsize=9,
    )
    ax.legend(fontsize=7)
    return figure


def save_figure(figure: Figure, path: str | Path) -> Path:
    """Render ``figure`` to a PNG at ``path`` with no timestamped metadata (same bytes per run)."""
    target = Path(path)
    figure.savefig(target, dpi=100, metadata={"Software": None})
    return target


def check_figure(figure: Figure) -> list[str]:
    """What a figure lacks of the rules above: a title, axis labels, a legend for several
    series, and, where it draws intervals, the number of replications and the method."""
    problems: list[str] = []
    suptitle = figure.get_suptitle()
    texts = [suptitle, *(t.get_text() for t in figure.texts)]
    for index, ax in enumerate(figure.axes):
        name = ax.get_title() or f"axes {index}"
        if not (ax.get_title() or suptitle):
            problems.append(f"{name}: no title")
        if not ax.get_xlabel():
            problems.append(f"{name}: no x label")
        if not ax.get_ylabel():
            problems.append(f"{name}: no y label")
        _handles, labels = ax.get_legend_handles_labels()
        if len(labels) > 1 and ax.get_legend() is None:
            problems.append(f"{name}: {len(labels)} series but no legend")
        if any(isinstance(c, ErrorbarContainer) for c in ax.containers):
            said = " ".join([ax.get_title(), *texts])
            if "n = " not in said or "%" not in said:
                problems.append(f"{name}: intervals without n and the method")
    return problems
