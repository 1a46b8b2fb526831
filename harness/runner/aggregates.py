"""The tables of a run that do not grow with its traffic, kept at every records level.

Why apart from the joins (``harness.runner.tables``): these are sums, built from the stores'
exports in bulk on integer keys, and they are all a ``summary`` run has. Each is sized by the
run's sampling intervals (and a few labels: wait bins, operations and outcomes, organizations,
days and kinds), whatever the number of sessions, requests or ledger rows behind it:

- ``intervals``: the sessions created in each interval and what became of them;
- ``waits``: each start-up wait's histogram per interval of creation (``harness.runner.waits``);
- ``requests`` and ``arrivals``: the clients' tallies per interval;
- ``ledger_daily``: ledger rows per organization, UTC day, kind and billing surface.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.runner.columns import codes, floats, relabel, strings, times, to_frame, to_series
from harness.runner.waits import NO_WAIT, WAIT_EDGES, WAIT_KINDS, bin_of
from sim.billing.rules import ENTRY_KINDS
from sim.columns import Column, Table
from sim.lifecycle import STATUSES

if TYPE_CHECKING:
    from harness.runner.engine import RawRun

__all__ = [
    "AGGREGATES",
    "arrivals",
    "intervals",
    "ledger_daily",
    "named",
    "raw_values",
    "requests",
    "session_numbers",
    "waits",
]

#: The tables that stay the same size whatever the traffic (kept at every records level).
AGGREGATES: tuple[str, ...] = ("intervals", "requests", "arrivals", "waits", "ledger_daily")


def ints(values: Any) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.int64))


def raw_values(table: Table, name: str) -> np.ndarray[Any, Any]:
    """An exported column's values as numbers (times as floats, categories as their codes)."""
    values = table.columns[name].values
    assert not callable(values) and not isinstance(values, Mapping)
    if table.columns[name].kind in ("time", "float"):
        return floats(values)
    return codes(values)


def named(raw: RawRun, org_ids: pd.Series) -> pd.Series:
    """The ``organization`` column of rows with the categorical ``org_ids``: each
    organization's name."""
    names = {o.id: o.name for o in raw.organizations}
    return relabel(org_ids, [names.get(o, o) for o in org_ids.cat.categories])


def _slots(raw: RawRun) -> tuple[float, int]:
    """The run's sampling interval and how many intervals it has (the last one ends with it)."""
    interval = raw.scenario.sample_every
    return interval, math.floor(raw.end / interval + 1e-9) + 1


def _cohorts(seconds: np.ndarray[Any, Any], interval: float, count: int) -> np.ndarray[Any, Any]:
    """The interval each instant falls in (the last one takes any later instant)."""
    bins: np.ndarray[Any, Any] = np.floor_divide(seconds, interval).astype(np.int64)
    cohorts: np.ndarray[Any, Any] = np.minimum(bins, count - 1)
    return cohorts


def _label_code(column: Column, label: str) -> int:
    """The code of ``label`` among a category column's labels (-1: none has it)."""
    labels = list(column.labels or ())
    return labels.index(label) if label in labels else -1


def session_numbers(sessions: Table) -> dict[str, np.ndarray[Any, Any]]:
    """What the aggregates need of every session, as numbers: status and error codes (into the
    exported labels), billable seconds and times.

    Why numbers: the aggregates are all a summary run builds, and the ids and names of every
    session would be transient memory they never use."""
    names = ("status", "error_code", "billable_seconds", "created_at", "started_at")
    numbers = {name: raw_values(sessions, name) for name in (*names, "first_frame_at", "ended_at")}
    numbers["no_capacity"] = numbers["error_code"] == _label_code(
        sessions.columns["error_code"], "no_capacity"
    )
    return numbers


def intervals(raw: RawRun, columns: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    """The sessions created in each interval and what became of them, whenever it happened:
    how many were placed (and waited, with their placement waits), reached their first frame
    (with their first-frame waits), finished by final status (with their billable seconds) or
    failed ``no_capacity``. Binning every column by the interval of creation is what lets a
    window of intervals give the metrics of the sessions created in it exactly."""
    interval, count = _slots(raw)
    status = columns["status"]
    cohort = _cohorts(columns["created_at"], interval, count)
    placed = ~np.isnan(columns["started_at"])
    framed = ~np.isnan(columns["first_frame_at"])
    finished = ~np.isnan(columns["ended_at"])
    placement = columns["started_at"] - columns["created_at"]
    first_frame = columns["first_frame_at"] - columns["created_at"]

    def per(mask: np.ndarray[Any, Any], weights: Any = None) -> np.ndarray[Any, Any]:
        chosen = None if weights is None else np.asarray(weights)[mask]
        return np.bincount(cohort[mask], weights=chosen, minlength=count)[:count]

    def most(mask: np.ndarray[Any, Any], values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        top = np.zeros(count)
        np.maximum.at(top, cohort[mask], values[mask])
        return top

    t = np.arange(count) * interval
    table = pd.DataFrame(
        {
            "interval": ints(np.arange(count)),
            "at": times(raw.epoch, t.astype(float)),
            "t": t.astype(float),
            "sessions_created": ints(per(np.ones(len(cohort), dtype=bool))),
            "sessions_placed": ints(per(placed)),
            "waited": ints(per(placed & (placement > NO_WAIT))),
            "placement_wait_seconds_sum": per(placed, placement),
            "placement_wait_seconds_max": most(placed, placement),
            "sessions_started": ints(per(framed)),
            "first_frame_wait_seconds_sum": per(framed, first_frame),
            "first_frame_wait_seconds_max": most(framed, first_frame),
        }
    )
    for name in ("ended", "failed", "canceled"):
        table[f"sessions_{name}"] = ints(per(finished & (status == STATUSES.index(name))))
    table["no_capacity"] = ints(per(finished & columns["no_capacity"]))
    billable = columns["billable_seconds"].astype(float)
    table["billable_seconds"] = ints(per(finished, billable).round())
    return table


def waits(raw: RawRun, columns: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    """The histogram of each wait per interval of creation: one row per (interval, wait kind,
    bin) that holds a wait (``harness.runner.waits``), so its size is bounded by the intervals
    and the bins, whatever the traffic."""
    interval, count = _slots(raw)
    cohort = _cohorts(columns["created_at"], interval, count)
    bins = len(WAIT_EDGES)
    keys = []
    for kind, end in enumerate(("started_at", "first_frame_at")):
        mask = ~np.isnan(columns[end])
        waited = (columns[end] - columns["created_at"])[mask]
        keys.append((cohort[mask] * len(WAIT_KINDS) + kind) * bins + bin_of(waited))
    unique, counts = np.unique(np.concatenate(keys), return_counts=True)
    rest, index = np.divmod(unique, bins)
    slots, kinds = np.divmod(rest, len(WAIT_KINDS))
    edges = np.asarray(WAIT_EDGES)
    lows = np.where(index > 0, edges[np.maximum(index - 1, 0)], 0.0)
    t = slots.astype(float) * interval
    return pd.DataFrame(
        {
            "interval": ints(slots),
            "at": times(raw.epoch, t),
            "t": t,
            "kind": to_series(
                Column("category", kinds.tolist(), labels=list(WAIT_KINDS)),
                len(kinds),
                raw.epoch,
            ),
            "low": lows.astype(float),
            "high": edges[index].astype(float),
            "sessions": ints(counts),
        }
    )


def _tallied(raw: RawRun, table: Table) -> pd.DataFrame:
    """A tally's table (``Tallies.export``) as a frame: its interval, when the interval starts
    (``at``, ``t``), then the tally's own columns."""
    frame = to_frame(table, raw.epoch)
    t = frame["interval"].to_numpy().astype(float) * raw.scenario.sample_every
    frame.insert(1, "at", times(raw.epoch, t))
    frame.insert(2, "t", t)
    return frame


def requests(raw: RawRun, table: Table) -> pd.DataFrame:
    """Requests per interval, operation, outcome and first attempt or not (``Tallies``)."""
    return _tallied(raw, table)


def arrivals(raw: RawRun, table: Table) -> pd.DataFrame:
    """Arrivals and their attempts per interval, kind and final outcome (``Tallies``)."""
    return _tallied(raw, table)


def ledger_daily(raw: RawRun, table: Table) -> pd.DataFrame:
    """Ledger rows per organization, UTC day, kind and billing surface (sums), sorted by those
    (surfaces by name, none first).

    Grouped on one integer key per row rather than a data frame of the rows, whose group-by
    would hold every row's values at once to make a table of a few thousand rows."""
    epoch = raw.epoch
    count = table.length
    day_start = epoch.epoch.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (epoch.epoch - day_start).total_seconds()
    day = np.floor_divide(raw_values(table, "at") + offset, 86_400).astype(np.int64)
    labels = [label or "" for label in table.columns["billing_surface"].labels or ()]
    names = sorted({*labels, ""})
    rank = {name: i for i, name in enumerate(names)}
    by_attribution = np.array([rank[label] for label in labels], dtype=np.int64)
    surface = by_attribution[raw_values(table, "billing_surface")] if count else day
    # One key per row, ordered as (organization, day, kind, surface) are.
    sizes = (int(day.max()) + 1 if count else 1, len(ENTRY_KINDS), len(names))
    key = raw_values(table, "org_id") * sizes[0] + day
    key = (key * sizes[1] + raw_values(table, "kind")) * sizes[2] + surface
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([count > 0], key[1:] != key[:-1])))

    def sums(name: str) -> np.ndarray[Any, Any]:
        values = raw_values(table, name)
        return np.add.reduceat(values[order], starts) if count else values

    first = key[starts]
    first, surfaces = np.divmod(first, sizes[2])
    first, kinds = np.divmod(first, sizes[1])
    orgs, days = np.divmod(first, sizes[0])
    dates = np.datetime64(day_start.date()) + days.astype("timedelta64[D]")
    groups = len(starts)
    org_id = to_series(replace(table.columns["org_id"], values=orgs), groups, epoch)
    return pd.DataFrame(
        {
            "organization": named(raw, org_id),
            "org_id": org_id,
            "day": strings(np.datetime_as_string(dates, unit="D")),
            "kind": to_series(Column("category", kinds, labels=ENTRY_KINDS), groups, epoch),
            "billing_surface": to_series(
                Column("category", surfaces, labels=[name or None for name in names]),
                groups,
                epoch,
            ),
            "rows": ints(np.diff(np.append(starts, count))),
            "credits": ints(sums("credits")),
            "billable_seconds": ints(sums("billable_seconds")),
        }
    )
