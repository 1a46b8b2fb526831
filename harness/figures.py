"""Figures of runs and sweeps, shared by the demo's report and the notebooks.

Why one module: a figure is read without its code, so each one carries everything a reader needs
to trust it: a title, axis labels with units (and the timezone of a time axis), integer ticks
where it counts things, a legend for every series, markers for the events that explain a change
(capacity lost, a balance exhausted) and, when it shows intervals, how many replications they
pool and which method computed them. ``check_figure`` states those rules as code; the demo's
test and the notebooks' test run it on every figure they draw.

Every function takes the harness's DataFrames (never live simulator objects) and returns a
matplotlib ``Figure``; nothing here picks a backend, so the notebooks show figures inline and the
demo renders them to PNG with Agg.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import matplotlib.dates as mdates
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.collect import RunResult
from harness.sweep.aggregate import CONFIDENCE, METHOD_LABELS

__all__ = [
    "balance_over_time",
    "check_figure",
    "credits_per_day",
    "daily_credits_by_timezone",
    "pool_over_time",
    "refusals_over_time",
    "save_figure",
    "sessions_by_status",
    "stacked_totals",
    "startup_waits",
    "sweep_figure",
]

_CAPACITY_LOST = "capacity lost"
_CAPACITY_BACK = "capacity restored"


def _new(width: float = 9.0, height: float = 3.6) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _time_axis(ax: Axes, timezone: str) -> None:
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
    """The moments the pool's intended size fell (capacity lost) or rose back (restored)."""
    capacity = utilization["capacity"]
    changes = []
    for index in range(1, len(utilization)):
        before, after = capacity.iloc[index - 1], capacity.iloc[index]
        if after != before:
            label = _CAPACITY_LOST if after < before else _CAPACITY_BACK
            changes.append((utilization["at"].iloc[index], label))
    return changes


def _mark_capacity(ax: Axes, utilization: pd.DataFrame, timezone: str) -> None:
    seen: set[str] = set()
    for at, label in capacity_changes(utilization):
        colour = "tab:red" if label == _CAPACITY_LOST else "tab:green"
        ax.axvline(
            _x(at),
            color=colour,
            linestyle="--",
            linewidth=1,
            label=label if label not in seen else None,
        )
        seen.add(label)


def _binned(times: pd.Series, every: str, timezone: str) -> pd.Series:
    return cast(pd.Series, _local(times, timezone).dt.floor(every))


def _stacked_bars(ax: Axes, table: pd.DataFrame, every: str) -> None:
    width = pd.Timedelta(every) / pd.Timedelta(days=1)  # date axes count in days
    bottom = None
    for column in table.columns:
        values = table[column]
        ax.bar(table.index, values, width=width, bottom=bottom, label=str(column), align="edge")
        bottom = values if bottom is None else bottom + values


def _per_interval(
    result: RunResult,
    rows: pd.DataFrame,
    *,
    at: str,
    by: str,
    every: str,
    timezone: str,
    ylabel: str,
    title: str,
) -> Figure:
    """``rows`` counted per interval of their ``at`` column, stacked by ``by``, with the pool's
    capacity changes marked."""
    figure, ax = _new()
    if len(rows):
        table = (
            rows.assign(bin=_binned(rows[at], every, timezone), one=1)
            .pivot_table(index="bin", columns=by, values="one", aggfunc="sum")
            .fillna(0)
        )
        _stacked_bars(ax, table, every)
    else:
        ax.plot([], [], label="none")
    _mark_capacity(ax, result.utilization, timezone)
    _time_axis(ax, timezone)
    _counts(ax, ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8, ncols=2)
    return figure


def sessions_by_status(result: RunResult, *, every: str = "10min", timezone: str = "UTC") -> Figure:
    """Sessions created per interval, stacked by the status they ended in."""
    sessions = result.sessions
    return _per_interval(
        result, sessions, at="created_at", by="status", every=every, timezone=timezone,
        ylabel=f"sessions created per {every}",
        title=f"Sessions by final status (n = {len(sessions):,} sessions)",
    )  # fmt: skip


def startup_waits(result: RunResult, *, bins: int = 40) -> Figure:
    """How long a customer waited for its avatar: created → first frame (queueing for a worker
    plus its boot), for every session that started, and how many never did (``no_capacity``)."""
    sessions = result.sessions
    started = sessions.dropna(subset=["first_frame_at"])
    waits = (started["first_frame_at"] - started["created_at"]).dt.total_seconds()
    failed = int((sessions["error_code"] == "no_capacity").sum())
    figure, ax = _new(7.0, 3.6)
    ax.hist(waits, bins=bins, color="tab:blue", label=f"started sessions (n = {len(waits):,})")
    if len(waits):
        p95 = float(waits.quantile(0.95))
        ax.axvline(p95, color="tab:orange", linestyle=":", label="95th percentile")
    ax.set_xlabel("start-up wait, created to first frame (s)")
    _counts(ax, "sessions")
    ax.set_title(f"Start-up wait; {failed:,} more sessions failed no_capacity")
    ax.legend(fontsize=8)
    return figure


def pool_over_time(result: RunResult, *, timezone: str = "UTC", title: str = "") -> Figure:
    """Busy workers and queued jobs against the pool's capacity, sampled on a fixed grid."""
    util = result.utilization
    at = _local(util["at"], timezone)
    figure, ax = _new()
    ax.step(at, util["capacity"], where="post", color="grey", linestyle=":", label="capacity")
    ax.step(at, util["busy"], where="post", label="busy workers")
    ax.step(at, util["queued"], where="post", label="queued jobs")
    _mark_capacity(ax, util, timezone)
    _time_axis(ax, timezone)
    _counts(ax, "workers or jobs")
    mean = util["utilization"].mean()
    ax.set_title(title or f"Worker pool (mean utilization {mean:.1%}, {len(util):,} samples)")
    ax.legend(fontsize=8)
    return figure


def refusals_over_time(result: RunResult, *, every: str = "10min", timezone: str = "UTC") -> Figure:
    """Refused requests per interval, stacked by error code."""
    calls = result.api_calls
    refused = calls[~calls["outcome"].isin(["ok", "replayed"])]
    return _per_interval(
        result, refused, at="at", by="outcome", every=every, timezone=timezone,
        ylabel=f"refused requests per {every}",
        title=f"Refusals by code (n = {len(refused):,} of {len(calls):,} requests)",
    )  # fmt: skip


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
        _time_axis(ax, timezone)
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
