"""Records → tidy pandas DataFrames (NB-2): one row per thing, one column per field.

Why a separate collector (Mesa's ``datacollection`` idea): the runner produces records (the
session store, the event log, the ledger, pool samples, the clients' logs and tallies); turning
them into tables is a pure function of those records. Notebooks and sweeps read only these
tables, never live simulator objects.

Each store exports its own records as typed columns (``SessionStore.export``,
``EventLog.export``, ``Ledger.export``, ``CallLog.export``, ``ClientLog.export``), which
``harness.columns.frame`` turns into data frames; this module only joins them (a session's
client, an organization's name), labels them and derives what the tables add (``t``, ``frames``,
``placement_wait_seconds``, ``first_frame_wait_seconds``, ``overage``, the aggregates).

What a run keeps depends on its records level (``harness.runner.engine.RECORDS``): at ``full``
every table has its rows; at ``sessions`` the event log is not kept (``events`` is empty); at
``summary`` only the tables whose size does not grow with traffic have rows: the per-interval
``intervals``, ``requests`` and ``arrivals``, the ``waits`` histogram, ``ledger_daily``,
``utilization``, ``runs``, ``usage``, ``usage_daily`` and ``organizations``. Every table has the
same columns and dtypes at every level (a categorical's categories are the values it holds);
those aggregate tables are the same at every level too.

Conventions: instants are timezone-aware UTC datetimes (``datetime64[us, UTC]``) next to a float
``t`` in simulated seconds since the scenario start; durations are float seconds; ids are
strings; text of few distinct values (statuses, kinds, organizations, surfaces, qualities, codes)
is categorical; a value that does not apply is missing (``NaT``/``NaN``/``<NA>``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.columns import codes, floats, relabel, strings, times, to_frame, to_series
from harness.waits import NO_WAIT, WAIT_EDGES, WAIT_KINDS, bin_of
from sim.billing.ledger import ENTRY_KINDS, KIND_RULES
from sim.columns import Column, Table
from sim.lifecycle import STATUSES

if TYPE_CHECKING:
    from harness.runner.engine import RawRun

__all__ = ["AGGREGATES", "TABLES", "USAGE_KINDS", "WAIT_EDGES", "RunResult", "collect"]

#: The tables of a run, in the order they are written.
TABLES: tuple[str, ...] = (
    "sessions",
    "clients",
    "api_calls",
    "events",
    "ledger",
    "utilization",
    "runs",
    "usage",
    "usage_daily",
    "organizations",
    "intervals",
    "requests",
    "arrivals",
    "waits",
    "ledger_daily",
)

#: The tables that stay the same size whatever the traffic (kept at every records level).
AGGREGATES: tuple[str, ...] = ("intervals", "requests", "arrivals", "waits", "ledger_daily")


#: Ledger kinds that are customer usage (what ``GET /v1/usage`` sums).
USAGE_KINDS: tuple[str, ...] = tuple(k for k in ENTRY_KINDS if KIND_RULES[k].usage)


@dataclass(frozen=True)
class RunResult:
    """Every table of one scenario run, plus what produced it."""

    scenario: str
    seed: int
    duration: float  # simulated seconds, cooldown included
    sessions: pd.DataFrame
    clients: pd.DataFrame
    api_calls: pd.DataFrame
    events: pd.DataFrame
    ledger: pd.DataFrame
    utilization: pd.DataFrame
    runs: pd.DataFrame
    usage: pd.DataFrame
    usage_daily: pd.DataFrame
    organizations: pd.DataFrame
    intervals: pd.DataFrame
    requests: pd.DataFrame
    arrivals: pd.DataFrame
    waits: pd.DataFrame
    ledger_daily: pd.DataFrame
    records: str = "full"  # what the run kept: "full", "sessions" or "summary"

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}

    def write_parquet(self, directory: str | Path) -> list[Path]:
        """One Parquet file per table in ``directory``; returns the paths written."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, frame in self.tables().items():
            path = out / f"{name}.parquet"
            frame.to_parquet(path, index=False)
            paths.append(path)
        return paths


# -- helpers ---------------------------------------------------------------------------------


def _names(raw: RawRun) -> dict[str, str]:
    return {o.id: o.name for o in raw.organizations}


def _named(raw: RawRun, org_ids: pd.Series) -> pd.Series:
    """The ``organization`` column of rows with ``org_ids``: each organization's name."""
    names = _names(raw)
    return relabel(org_ids, [names.get(o, o) for o in org_ids.cat.categories])


def _ints(values: Any) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.int64))


def _intervals_of(seconds: np.ndarray[Any, Any], interval: float) -> np.ndarray[Any, Any]:
    bins: np.ndarray[Any, Any] = np.floor_divide(seconds, interval).astype(np.int64)
    return bins


def _raw(table: Table, name: str) -> np.ndarray[Any, Any]:
    """An exported column's values as numbers (times as floats, categories as their codes)."""
    values = table.columns[name].values
    assert not callable(values) and not isinstance(values, Mapping)
    if table.columns[name].kind in ("time", "float"):
        return floats(values)
    return codes(values)


def _label_code(column: Column, label: str) -> int:
    """The code of ``label`` among a category column's labels (-1: none has it)."""
    labels = list(column.labels or ())
    return labels.index(label) if label in labels else -1


# -- per-row tables ----------------------------------------------------------------------------

_SESSION_COLUMNS = (
    "session_id", "organization", "org_id", "client", "avatar_id", "quality", "surface",
    "transport", "transport_url", "transport_room_name", "transport_audio_source", "status",
    "billable_seconds", "frames", "error_code", "end_reason", "worker_id",
    "idle_timeout_seconds", "max_duration_seconds", "metadata", "embed_id", "charged",
    "barge_ins", "created_at", "started_at", "first_frame_at", "ending_at", "ended_at",
    "placement_wait_seconds", "first_frame_wait_seconds", "planned_length",
)  # fmt: skip


def _session_numbers(sessions: Table) -> dict[str, np.ndarray[Any, Any]]:
    """What the aggregates need of every session, as numbers: status and error codes (into the
    exported labels), billable seconds and times.

    Why numbers: the aggregates are all a summary run builds, and for a million sessions the
    object arrays of ids and names cost about 200 MB of transient memory they never use."""
    names = ("status", "error_code", "billable_seconds", "created_at", "started_at")
    numbers = {name: _raw(sessions, name) for name in (*names, "first_frame_at", "ended_at")}
    numbers["no_capacity"] = numbers["error_code"] == _label_code(
        sessions.columns["error_code"], "no_capacity"
    )
    return numbers


def _sessions(
    raw: RawRun, table: Table, clients: pd.DataFrame, numbers: dict[str, np.ndarray[Any, Any]]
) -> pd.DataFrame:
    """Every session, with the client that created it and the length it planned (joined on
    the session id), its organization's name, its frames and its two waits (``harness.waits``)."""
    summary = raw.records == "summary"
    sessions = to_frame(table, raw.platform.clock, empty=summary)
    rows = len(sessions)
    client = np.zeros(rows, dtype=np.int64)
    unknown = np.ones(rows, dtype=bool)
    planned = np.full(rows, math.nan)
    made = clients[clients["kind"] == "session"]
    at = pd.Index(sessions["session_id"]).get_indexer(made["resource_id"])
    found = at >= 0
    client[at[found]] = made["client"].to_numpy()[found]
    planned[at[found]] = made["planned_length"].to_numpy()[found]
    unknown[at[found]] = False
    fps = raw.platform.config.sessions.frames_per_second
    started, created = numbers["started_at"], numbers["created_at"]
    sessions["organization"] = _named(raw, sessions["org_id"])
    sessions["client"] = pd.arrays.IntegerArray(client, unknown)
    sessions["surface"] = sessions.pop("billing_surface")
    sessions["frames"] = sessions["billable_seconds"] * fps
    sessions["placement_wait_seconds"] = (started - created)[:rows]
    sessions["first_frame_wait_seconds"] = (numbers["first_frame_at"] - created)[:rows]
    sessions["planned_length"] = planned
    return sessions[list(_SESSION_COLUMNS)]


_CLIENT_COLUMNS = (
    "client", "at", "t", "kind", "organization", "surface", "quality", "model",
    "planned_length", "attempts", "resource_id", "final_outcome",
)  # fmt: skip


def _clients(raw: RawRun) -> pd.DataFrame:
    """Every arrival, by client number."""
    table = raw.client_table()
    clients = to_frame(table, raw.platform.clock)
    clients["t"] = _raw(table, "at")
    order = np.argsort(clients["client"].to_numpy(), kind="stable")
    return clients.take(order).reset_index(drop=True)[list(_CLIENT_COLUMNS)]


_CALL_COLUMNS = (
    "at", "t", "client", "operation", "surface", "organization", "org_id", "key", "attempt",
    "outcome", "error_type", "retry_after", "delay", "idempotency_key", "resource_id", "retried",
)  # fmt: skip


def _api_calls(raw: RawRun) -> pd.DataFrame:
    table = raw.call_table()
    calls = to_frame(table, raw.platform.clock)
    calls["t"] = _raw(table, "at")
    calls["retried"] = calls["attempt"] > 1
    return calls[list(_CALL_COLUMNS)]


_EVENT_COLUMNS = (
    "event_id", "at", "t", "type", "organization", "org_id", "object_type", "object_id",
    "status", "reason", "code", "billable_seconds", "frames", "worker_id", "drain_seconds",
    "dropped_seconds", "payload",
)  # fmt: skip


def _events(raw: RawRun) -> pd.DataFrame:
    """Every event of the log: what it is about and the values its payload shows, as columns
    (a session event's session as it was is its row of ``sessions`` with this status and
    usage)."""
    table = raw.platform.kernel.events.export()
    events = to_frame(table, raw.platform.clock)
    events["t"] = _raw(table, "at")
    events["organization"] = _named(raw, events["org_id"])
    events["billable_seconds"] = events.pop("seconds")
    events["frames"] = events["billable_seconds"] * raw.platform.config.sessions.frames_per_second
    return events[list(_EVENT_COLUMNS)]


_LEDGER_COLUMNS = (
    "id", "at", "seq", "kind", "organization", "org_id", "t", "credits", "rollover_delta",
    "included_delta", "granted_delta", "session_id", "run_id", "model", "internal",
    "billing_surface", "quality", "speech_billing_mode", "embed_id", "avatar_id", "operation",
    "pricing_version", "billable_seconds", "note", "overage",
)  # fmt: skip
#: The codes of the kinds that debit the pools (``KIND_RULES``): their overage is what the
#: pools could not cover.
_DEBITS = [code for code, kind in enumerate(ENTRY_KINDS) if KIND_RULES[kind].effect == "debit"]


def _ledger(raw: RawRun, table: Table) -> pd.DataFrame:
    """Every ledger row (none at ``summary``), with its position and its overage."""
    ledger = to_frame(table, raw.platform.clock, empty=raw.records == "summary")
    count = len(ledger)
    ledger["seq"] = _ints(np.arange(count))
    ledger["organization"] = _named(raw, ledger["org_id"])
    ledger["t"] = _raw(table, "at")[:count]
    change = ledger["rollover_delta"] + ledger["included_delta"] + ledger["granted_delta"]
    debit = np.isin(_raw(table, "kind")[:count], _DEBITS)
    ledger["overage"] = _ints(np.where(debit, ledger["credits"] + change, 0))
    return ledger[list(_LEDGER_COLUMNS)]


# -- tables that do not grow with traffic -------------------------------------------------------


def _utilization(raw: RawRun) -> pd.DataFrame:
    """One row per sampling interval ``[t, t + sample_every)`` (the last one ends with the run):
    the pool as sampled at its start, then what the pool's meter says of the whole interval:
    its most busy workers and queued jobs at any instant, its worker-seconds busy and in the
    pool, and their ratio, the interval's utilization (a time average, not a snapshot)."""
    clock = raw.platform.clock
    samples, meters = raw.samples, raw.meters
    at = floats([s.at for s in samples])
    frame = pd.DataFrame(
        {
            "at": times(clock, at),
            "t": at,
            **{
                name: pd.Series([getattr(s, name) for s in samples], dtype="int64")
                for name in ("capacity", "workers", "idle", "busy", "restarting", "queued")
            },
        }
    )
    after = meters[1:]
    frame["busy_max"] = _ints([m.busy_peak for m in after])
    frame["queued_max"] = _ints([m.waiting_peak for m in after])
    busy = np.diff(floats([m.busy_seconds for m in meters]))
    present = np.diff(floats([m.worker_seconds for m in meters]))
    frame["busy_seconds"] = busy
    frame["worker_seconds"] = present
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["utilization"] = np.where(
            present > 0, busy / np.where(present > 0, present, 1), np.nan
        )
    return frame


def _runs(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    names = _names(raw)
    runs = raw.platform.runs.runs()
    frame = pd.DataFrame(
        {
            "run_id": strings([r.id for r in runs]),
            "organization": strings([names.get(r.org_id, r.org_id) for r in runs]),
            "org_id": strings([r.org_id for r in runs]),
            "model": strings([r.model for r in runs]),
            "operation": strings([r.operation for r in runs]),
            "status": strings([str(r.status.value) for r in runs]),
            "credits_charged": _ints([r.charged for r in runs]),
            "error_code": strings([None if r.error is None else r.error.get("code") for r in runs]),
        }
    )
    for column in ("created_at", "started_at", "completed_at"):
        moments = [getattr(r, column) for r in runs]
        frame[column] = times(clock, floats([math.nan if m is None else m for m in moments]))
    return frame


def _usage(raw: RawRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    summary: dict[str, list[Any]] = defaultdict(list)
    daily: dict[str, list[Any]] = defaultdict(list)
    for org, timezone, body in raw.usage:
        summary["organization"].append(org)
        summary["timezone"].append(timezone)
        for column in ("billable_seconds", "sessions", "credits_charged"):
            summary[column].append(int(body[column]))
        for day, surfaces in body["daily_credits_by_billing_surface"].items():
            for surface, credits in surfaces.items():
                daily["organization"].append(org)
                daily["timezone"].append(timezone)
                daily["day"].append(day)
                daily["surface"].append(surface)
                daily["credits"].append(int(credits))
    usage = pd.DataFrame(
        {
            "organization": strings(summary["organization"]),
            "timezone": strings(summary["timezone"]),
            **{c: _ints(summary[c]) for c in ("billable_seconds", "sessions", "credits_charged")},
        }
    )
    usage_daily = pd.DataFrame(
        {
            **{c: strings(daily[c]) for c in ("organization", "timezone", "day", "surface")},
            "credits": _ints(daily["credits"]),
        }
    )
    return usage, usage_daily


def _organizations(raw: RawRun) -> pd.DataFrame:
    rows = []
    for org in raw.organizations:
        quota = raw.platform.billing.quota(org.id)
        rows.append(
            {
                "organization": org.name,
                "org_id": org.id,
                "plan": org.plan,
                "keys": len(org.callers),
                "balance_credits": int(quota["balance_credits"]),
                "included_credits_limit": int(quota["included_credits_limit"]),
                "low_balance_threshold_credits": int(quota["low_balance_threshold_credits"]),
                "can_start_session": bool(quota["can_start_session"]),
            }
        )
    frame = pd.DataFrame(rows)
    for column in ("organization", "org_id", "plan"):
        if column in frame:
            frame[column] = frame[column].astype("str")
    return frame


def _intervals(raw: RawRun, columns: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    """The sessions created in each interval and what became of them, whenever it happened:
    how many were placed (and waited, with their placement waits), reached their first frame
    (with their first-frame waits), finished by final status (with their billable seconds) or
    failed ``no_capacity``. Binning every column by the interval of creation is what lets a
    window of intervals give the metrics of the sessions created in it exactly."""
    interval = raw.scenario.sample_every
    count = math.floor(raw.end / interval + 1e-9) + 1
    status = columns["status"]
    cohort = np.minimum(_intervals_of(columns["created_at"], interval), count - 1)
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
            "interval": _ints(np.arange(count)),
            "at": times(raw.platform.clock, t.astype(float)),
            "t": t.astype(float),
            "sessions_created": _ints(per(np.ones(len(cohort), dtype=bool))),
            "sessions_placed": _ints(per(placed)),
            "waited": _ints(per(placed & (placement > NO_WAIT))),
            "placement_wait_seconds_sum": per(placed, placement),
            "placement_wait_seconds_max": most(placed, placement),
            "sessions_started": _ints(per(framed)),
            "first_frame_wait_seconds_sum": per(framed, first_frame),
            "first_frame_wait_seconds_max": most(framed, first_frame),
        }
    )
    for name in ("ended", "failed", "canceled"):
        table[f"sessions_{name}"] = _ints(per(finished & (status == STATUSES.index(name))))
    table["no_capacity"] = _ints(per(finished & columns["no_capacity"]))
    billable = columns["billable_seconds"].astype(float)
    table["billable_seconds"] = _ints(per(finished, billable).round())
    return table


def _waits(raw: RawRun, columns: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    """The histogram of each wait per interval of creation: one row per (interval, wait kind,
    bin) that holds a wait (``harness.waits``), so its size is bounded by the intervals and the
    bins, whatever the traffic."""
    interval = raw.scenario.sample_every
    count = math.floor(raw.end / interval + 1e-9) + 1
    cohort = np.minimum(_intervals_of(columns["created_at"], interval), count - 1)
    bins = len(WAIT_EDGES)
    keys = []
    for kind, end in enumerate(("started_at", "first_frame_at")):
        mask = ~np.isnan(columns[end])
        waits = (columns[end] - columns["created_at"])[mask]
        keys.append((cohort[mask] * len(WAIT_KINDS) + kind) * bins + bin_of(waits))
    unique, counts = np.unique(np.concatenate(keys), return_counts=True)
    rest, index = np.divmod(unique, bins)
    slots, kinds = np.divmod(rest, len(WAIT_KINDS))
    edges = np.asarray(WAIT_EDGES)
    lows = np.where(index > 0, edges[np.maximum(index - 1, 0)], 0.0)
    t = slots.astype(float) * interval
    return pd.DataFrame(
        {
            "interval": _ints(slots),
            "at": times(raw.platform.clock, t),
            "t": t,
            "kind": to_series(
                Column("category", kinds.tolist(), labels=list(WAIT_KINDS)),
                len(kinds),
                raw.platform.clock,
            ),
            "low": lows.astype(float),
            "high": edges[index].astype(float),
            "sessions": _ints(counts),
        }
    )


def _tallied(
    raw: RawRun,
    counts: Mapping[tuple[Any, ...], int],
    labels: tuple[str, ...],
    **more: Mapping[tuple[Any, ...], int],
) -> pd.DataFrame:
    """A tally keyed by (interval, *labels) as a frame sorted by its keys: the labels as
    columns, then the count (and any parallel tallies) per key."""
    keys = sorted(counts)
    interval = raw.pool.tallies.interval
    t = floats([k[0] * interval for k in keys])
    frame = pd.DataFrame(
        {
            "interval": _ints([k[0] for k in keys]),
            "at": times(raw.platform.clock, t),
            "t": t,
            **{name: strings([k[i + 1] for k in keys]) for i, name in enumerate(labels)},
        }
    )
    for name, tally in more.items():
        frame[name] = _ints([tally[k] for k in keys])
    return frame


def _requests(raw: RawRun) -> pd.DataFrame:
    tally = raw.pool.tallies
    frame = _tallied(raw, tally.calls, ("operation", "outcome"), requests=tally.calls)
    first = [k[3] for k in sorted(tally.calls)]
    frame.insert(5, "first_attempt", pd.Series(first, dtype=bool))
    return frame


def _arrivals(raw: RawRun) -> pd.DataFrame:
    tally = raw.pool.tallies
    return _tallied(
        raw,
        tally.clients,
        ("kind", "final_outcome"),
        clients=tally.clients,
        attempts=tally.attempts,
    )


def _ledger_daily(raw: RawRun, table: Table) -> pd.DataFrame:
    """Ledger rows per organization, UTC day, kind and billing surface (sums), sorted by those
    (surfaces by name, none first).

    Grouped on one integer key per row rather than a DataFrame of the rows: a pandas group-by
    of a month's ledger (1.25 million rows at 1M sessions) held about 230 MB at once, a fifth of
    the month's peak, to make a table of a few thousand rows.
    """
    clock = raw.platform.clock
    count = table.length
    day_start = clock.epoch.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (clock.epoch - day_start).total_seconds()
    day = np.floor_divide(_raw(table, "at") + offset, 86_400).astype(np.int64)
    labels = [label or "" for label in table.columns["billing_surface"].labels or ()]
    names = sorted({*labels, ""})
    rank = {name: i for i, name in enumerate(names)}
    by_attribution = np.array([rank[label] for label in labels], dtype=np.int64)
    surface = by_attribution[_raw(table, "billing_surface")] if count else day
    # One key per row, ordered as (organization, day, kind, surface) are.
    sizes = (int(day.max()) + 1 if count else 1, len(ENTRY_KINDS), len(names))
    key = _raw(table, "org_id") * sizes[0] + day
    key = (key * sizes[1] + _raw(table, "kind")) * sizes[2] + surface
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([count > 0], key[1:] != key[:-1])))

    def sums(name: str) -> np.ndarray[Any, Any]:
        values = _raw(table, name)
        return np.add.reduceat(values[order], starts) if count else values

    first = key[starts]
    first, surfaces = np.divmod(first, sizes[2])
    first, kinds = np.divmod(first, sizes[1])
    orgs, days = np.divmod(first, sizes[0])
    dates = np.datetime64(day_start.date()) + days.astype("timedelta64[D]")
    groups = len(starts)
    org_id = to_series(replace(table.columns["org_id"], values=orgs), groups, clock)
    return pd.DataFrame(
        {
            "organization": _named(raw, org_id),
            "org_id": org_id,
            "day": strings(np.datetime_as_string(dates, unit="D")),
            "kind": to_series(Column("category", kinds, labels=ENTRY_KINDS), groups, clock),
            "billing_surface": to_series(
                Column("category", surfaces, labels=[name or None for name in names]),
                groups,
                clock,
            ),
            "rows": _ints(np.diff(np.append(starts, count))),
            "credits": _ints(sums("credits")),
            "billable_seconds": _ints(sums("billable_seconds")),
        }
    )


def collect(raw: RawRun, *, release: bool = False) -> RunResult:
    """The tables of one raw run.

    ``release``: the caller hands the run over (``run_scenario``, whose run nobody else sees),
    so each large record is dropped as soon as the last table built from it holds it, and the
    tables built after it grow into its memory instead of on top of it: the ledger first (its
    rows and indexes, once the organizations' quotas, ``ledger_daily`` and ``ledger`` are
    built), then the event log, the clients' arrivals, the session store and the requests.

    A run collected with ``release`` is gone: collecting it again raises ``ValueError`` and its
    platform refuses every later call (``Platform.hand_over``), rather than either answering
    from emptied records."""
    if raw.platform.handed_over:
        raise ValueError(
            f"run {raw.scenario.name!r} (seed {raw.seed}) was collected with release=True: "
            "its records were dropped, so it cannot be collected again"
        )
    platform = raw.platform
    if release:
        platform.hand_over()
    utilization, runs, organizations = _utilization(raw), _runs(raw), _organizations(raw)
    usage, usage_daily = _usage(raw)
    ledger_table = platform.billing.ledger.export()
    ledger_daily = _ledger_daily(raw, ledger_table)
    ledger = _ledger(raw, ledger_table)
    del ledger_table
    if release:  # its rows and indexes (the usage rollups among them) are not read again
        platform.billing.ledger.release()
    events = _events(raw)
    if release:
        platform.kernel.events.release()
    store = platform.sessions.store
    session_table = store.export(platform.clock.now)
    numbers = _session_numbers(session_table)
    intervals, waits = _intervals(raw, numbers), _waits(raw, numbers)
    requests, arrivals = _requests(raw), _arrivals(raw)  # the tallies, from the clients' logs
    clients = _clients(raw)
    if release:
        raw.pool.clients = None
    sessions = _sessions(raw, session_table, clients, numbers)
    del session_table, numbers
    if release:
        store.release()
    api_calls = _api_calls(raw)
    if release:
        raw.pool.calls = None
    return RunResult(
        scenario=raw.scenario.name,
        seed=raw.seed,
        duration=raw.end,
        sessions=sessions,
        clients=clients,
        api_calls=api_calls,
        events=events,
        ledger=ledger,
        utilization=utilization,
        runs=runs,
        usage=usage,
        usage_daily=usage_daily,
        organizations=organizations,
        intervals=intervals,
        requests=requests,
        arrivals=arrivals,
        waits=waits,
        ledger_daily=ledger_daily,
        records=raw.records,
    )
