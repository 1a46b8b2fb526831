"""A run's tables as tidy pandas DataFrames (NB-2): one row per thing, one column per field.

Why a separate collector (Mesa's ``datacollection`` idea): a run ends as the tables its stores
export (``RawRun``: the sessions, the event log, the ledger, the runs, the organizations with
their quotas and usage, the pool's samples, the clients' logs and tallies); turning them into
data frames is a pure function of those tables. Notebooks and sweeps read only these frames,
never live simulator objects.

``harness.runner.columns.to_frame`` turns each export into a data frame; this module only joins
them (a session's client, an organization's name, a quota), labels them and derives what the
frames add (``t``, ``frames``, ``placement_wait_seconds``, ``first_frame_wait_seconds``,
``overage``); the tables that do not grow with traffic are ``harness.runner.aggregates``.

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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from harness.runner import aggregates
from harness.runner.aggregates import AGGREGATES, ints, named, raw_values, session_numbers
from harness.runner.columns import strings, to_frame
from harness.runner.waits import WAIT_EDGES
from sim.billing.rules import ENTRY_KINDS, KIND_RULES
from sim.columns import Table

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


# -- per-row tables ----------------------------------------------------------------------------

_SESSION_COLUMNS = (
    "session_id", "organization", "org_id", "client", "avatar_id", "quality", "surface",
    "transport", "transport_url", "transport_room_name", "transport_audio_source", "status",
    "billable_seconds", "frames", "error_code", "end_reason", "worker_id",
    "idle_timeout_seconds", "max_duration_seconds", "metadata", "embed_id", "charged",
    "barge_ins", "created_at", "started_at", "first_frame_at", "ending_at", "ended_at",
    "placement_wait_seconds", "first_frame_wait_seconds", "planned_length",
)  # fmt: skip


def _sessions(
    raw: RawRun, table: Table, clients: pd.DataFrame, numbers: dict[str, np.ndarray[Any, Any]]
) -> pd.DataFrame:
    """Every session, with the client that created it and the length it planned (joined on
    the session id), its organization's name, its frames and its two waits
    (``harness.runner.waits``)."""
    sessions = to_frame(table, raw.epoch, empty=raw.records == "summary")
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
    started, created = numbers["started_at"], numbers["created_at"]
    sessions["organization"] = named(raw, sessions["org_id"])
    sessions["client"] = pd.arrays.IntegerArray(client, unknown)
    sessions["surface"] = sessions.pop("billing_surface")
    sessions["frames"] = sessions["billable_seconds"] * raw.frames_per_second
    sessions["placement_wait_seconds"] = (started - created)[:rows]
    sessions["first_frame_wait_seconds"] = (numbers["first_frame_at"] - created)[:rows]
    sessions["planned_length"] = planned
    return sessions[list(_SESSION_COLUMNS)]


_CLIENT_COLUMNS = (
    "client", "at", "t", "kind", "organization", "surface", "quality", "model",
    "planned_length", "attempts", "resource_id", "final_outcome",
)  # fmt: skip


def _clients(raw: RawRun, table: Table) -> pd.DataFrame:
    """Every arrival, by client number."""
    clients = to_frame(table, raw.epoch)
    clients["t"] = raw_values(table, "at")
    order = np.argsort(clients["client"].to_numpy(), kind="stable")
    return clients.take(order).reset_index(drop=True)[list(_CLIENT_COLUMNS)]


_CALL_COLUMNS = (
    "at", "t", "client", "operation", "surface", "organization", "org_id", "key", "attempt",
    "outcome", "error_type", "retry_after", "delay", "idempotency_key", "resource_id", "retried",
)  # fmt: skip


def _api_calls(raw: RawRun, table: Table) -> pd.DataFrame:
    calls = to_frame(table, raw.epoch)
    calls["t"] = raw_values(table, "at")
    calls["retried"] = calls["attempt"] > 1
    return calls[list(_CALL_COLUMNS)]


_EVENT_COLUMNS = (
    "event_id", "at", "t", "type", "organization", "org_id", "object_type", "object_id",
    "status", "reason", "code", "billable_seconds", "frames", "worker_id", "drain_seconds",
    "dropped_seconds", "payload",
)  # fmt: skip


def _events(raw: RawRun, table: Table) -> pd.DataFrame:
    """Every event of the log: what it is about and the values its payload shows, as columns
    (a session event's session as it was is its row of ``sessions`` with this status and
    usage)."""
    events = to_frame(table, raw.epoch)
    events["t"] = raw_values(table, "at")
    events["organization"] = named(raw, events["org_id"])
    events["billable_seconds"] = events.pop("seconds")
    events["frames"] = events["billable_seconds"] * raw.frames_per_second
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
    ledger = to_frame(table, raw.epoch, empty=raw.records == "summary")
    count = len(ledger)
    ledger["seq"] = ints(np.arange(count))
    ledger["organization"] = named(raw, ledger["org_id"])
    ledger["t"] = raw_values(table, "at")[:count]
    change = ledger["rollover_delta"] + ledger["included_delta"] + ledger["granted_delta"]
    debit = np.isin(raw_values(table, "kind")[:count], _DEBITS)
    ledger["overage"] = ints(np.where(debit, ledger["credits"] + change, 0))
    return ledger[list(_LEDGER_COLUMNS)]


# -- tables of the run as a whole -------------------------------------------------------------


def _names(raw: RawRun, org_ids: pd.Series) -> pd.Series:
    """The ``organization`` column of rows with the text ``org_ids``: each one's name."""
    names = {o.id: o.name for o in raw.organizations}
    return strings([names.get(o, o) for o in org_ids])


def _utilization(raw: RawRun, table: Table) -> pd.DataFrame:
    """One row per sampling interval ``[t, t + sample_every)`` (the last one ends with the run):
    the pool as sampled at its start, then what the pool's meter says of the whole interval:
    its most busy workers and queued jobs at any instant, its worker-seconds busy and in the
    pool, and their ratio, the interval's utilization (a time average, not a snapshot)."""
    frame = to_frame(table, raw.epoch)
    frame.insert(1, "t", raw_values(table, "at"))
    busy, present = frame["busy_seconds"].to_numpy(), frame["worker_seconds"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["utilization"] = np.where(
            present > 0, busy / np.where(present > 0, present, 1), np.nan
        )
    return frame


_RUN_COLUMNS = (
    "run_id", "organization", "org_id", "model", "operation", "status", "credits_charged",
    "error_code", "created_at", "started_at", "completed_at",
)  # fmt: skip


def _runs(raw: RawRun, table: Table) -> pd.DataFrame:
    runs = to_frame(table, raw.epoch)
    runs["organization"] = _names(raw, runs["org_id"])
    return runs[list(_RUN_COLUMNS)]


def _usage(raw: RawRun, summary: Table, daily: Table) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``GET /v1/usage`` of the whole run per organization and timezone, and its daily credits
    per local day and billing surface, each row labelled with its organization's name."""
    usage = to_frame(summary, raw.epoch)
    usage.insert(0, "organization", _names(raw, usage.pop("org_id")))
    by_day = to_frame(daily, raw.epoch)
    by_day.insert(0, "organization", _names(raw, by_day.pop("org_id")))
    return usage, by_day


def _organizations(raw: RawRun, accounts: Table, quotas: Table) -> pd.DataFrame:
    """Each organization of the run: its name, id and plan, the keys its clients used, and its
    quota at the end of the run."""
    orgs = to_frame(accounts, raw.epoch).set_index("org_id", drop=False)
    quota = to_frame(quotas, raw.epoch).set_index("org_id")
    ids = [o.id for o in raw.organizations]
    frame = pd.DataFrame(
        {
            "organization": strings(orgs.loc[ids, "name"].to_numpy()),
            "org_id": strings(ids),
            "plan": strings(orgs.loc[ids, "plan"].to_numpy()),
            "keys": ints([len(o.callers) for o in raw.organizations]),
        }
    )
    for column in quota.columns:
        frame[column] = quota.loc[ids, column].to_numpy()
    return frame


#: The per-row frames of a ``summary`` run, built once per process: they have no rows, and their
#: columns and dtypes are the same in every run (a categorical's categories are the values it
#: holds: none), while building one costs as much as a small run's aggregates.
_EMPTY: dict[str, pd.DataFrame] = {}


def _rows(name: str, summary: bool, build: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """The per-row frame ``name`` built by ``build``; at ``summary``, a copy of the one built
    first (a copy: a caller may add columns to its frames)."""
    if not summary:
        return build()
    if name not in _EMPTY:
        _EMPTY[name] = build()
    return _EMPTY[name].copy()


def collect(raw: RawRun, *, release: bool = False) -> RunResult:
    """The data frames of one run's tables.

    ``release``: the caller hands the run over (``run_scenario``, whose run nobody else sees),
    so each table is taken out of the run once the last frame built from it holds it, and the
    frames built after it grow into its memory instead of on top of it: the ledger first, then
    the event log, the sessions and the clients' arrivals, the requests last. A run collected
    with ``release`` is gone: collecting it again raises ``ValueError``."""
    if not raw.tables:
        raise ValueError(
            f"run {raw.scenario.name!r} (seed {raw.seed}) was collected with release=True: "
            "its records were dropped, so it cannot be collected again"
        )
    tables = raw.tables if release else dict(raw.tables)
    take = tables.pop
    summary = raw.records == "summary"
    utilization, runs = _utilization(raw, take("utilization")), _runs(raw, take("runs"))
    organizations = _organizations(raw, take("organizations"), take("quotas"))
    usage, usage_daily = _usage(raw, take("usage"), take("usage_daily"))
    ledger_table = take("ledger")
    ledger_daily = aggregates.ledger_daily(raw, ledger_table)
    ledger = _rows("ledger", summary, partial(_ledger, raw, ledger_table))
    del ledger_table
    event_table = take("events")
    events = _rows("events", summary, partial(_events, raw, event_table))
    del event_table
    session_table = take("sessions")
    numbers = session_numbers(session_table)
    intervals, waits = aggregates.intervals(raw, numbers), aggregates.waits(raw, numbers)
    requests = aggregates.requests(raw, take("requests"))
    arrivals = aggregates.arrivals(raw, take("arrivals"))
    client_table = take("clients")
    clients = _rows("clients", summary, partial(_clients, raw, client_table))
    del client_table
    sessions = _rows("sessions", summary, partial(_sessions, raw, session_table, clients, numbers))
    del session_table, numbers
    call_table = take("calls")
    api_calls = _rows("api_calls", summary, partial(_api_calls, raw, call_table))
    del call_table
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
