"""Records → tidy pandas DataFrames (NB-2): one row per thing, one column per field.

Why a separate collector (Mesa's ``datacollection`` idea): the runner produces records (the
session store, the event log, the ledger, pool samples, the clients' logs and tallies); turning
them into tables is a pure function of those records. Notebooks and sweeps read only these
tables, never live simulator objects.

The records are columns of raw values, and the tables are built from them in bulk (NumPy arrays,
interned codes mapped once, ids and times converted vectorized, string columns written straight
into Arrow without a Python object per row), never row by row.

What a run keeps depends on its records level (``harness.runner.engine.RECORDS``): at ``full``
every table has its rows; at ``sessions`` the event log is not kept (``events`` is empty); at
``summary`` only the tables whose size does not grow with traffic have rows: the per-interval
``intervals``, ``requests`` and ``arrivals``, the ``waits`` histogram, ``ledger_daily``,
``utilization``, ``runs``, ``usage``, ``usage_daily`` and ``organizations``. Every table has the
same columns and dtypes at every level; those aggregate tables are the same at every level too.

Conventions: instants are timezone-aware UTC datetimes (``datetime64[us, UTC]``) next to a float
``t`` in simulated seconds since the scenario start; durations are float seconds; ids and codes
are strings; a value that does not apply is missing (``NaT``/``NaN``/``None``).
"""

from __future__ import annotations

import json
import math
from array import array
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from harness.columns import (
    POOL,
    arrow_strings,
    codes,
    epoch_ms,
    floats,
    lookup,
    return_free_memory,
    strings,
    text_column,
    times,
    ulids,
)
from harness.event_text import event_texts
from harness.gc_policy import rare_collections
from sim.billing.ledger import ATTRIBUTION, ENTRY_KINDS, KIND_RULES
from sim.lifecycle import STATUSES
from sim.sessions.records import usage_of

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

#: Bin edges (seconds) of the start-up wait histogram: fine where waits usually are.
WAIT_EDGES: tuple[float, ...] = (
    *(i * 0.25 for i in range(0, 121)),  # 0 .. 30 s by 0.25 s
    45.0, 60.0, 90.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, math.inf,
)  # fmt: skip

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


def _org_columns(
    raw: RawRun, org_ids: list[str], picked: np.ndarray[Any, Any]
) -> tuple[pd.Series, pd.Series]:
    """The ``organization`` and ``org_id`` columns of rows whose org ids are interned codes."""
    names = _names(raw)
    return lookup([names.get(o, o) for o in org_ids], picked), lookup(org_ids, picked)


def _optional_strings(
    values: Sequence[str | None], order: np.ndarray[Any, Any] | None = None
) -> pd.Series:
    """A string column of a list of strings (``None``: missing), taken in ``order`` if given.

    Converted a chunk at a time (``text_column``): converted at once, Arrow's builder doubled
    its buffers as it went, about 40 MB of transient room for a 100,000-session month's event
    subjects (the month's peak once the events' texts are written first), and the clients'
    resource ids were then copied again by a ``take``."""
    return text_column(values if order is None else map(values.__getitem__, order))


def _sparse(values: Mapping[int, str | None], count: int, default: str | None) -> pd.Series:
    """A string column of ``count`` rows that are ``default`` but for ``values`` (by row)."""
    vocabulary = [default, *dict.fromkeys(values.values())]
    code = {value: index for index, value in enumerate(vocabulary)}
    picked = np.zeros(count, dtype=np.int64)
    if values:
        picked[np.fromiter(values, dtype=np.int64, count=len(values))] = np.fromiter(
            (code[v] for v in values.values()), dtype=np.int64, count=len(values)
        )
    return lookup(vocabulary, picked)


def _ints(values: Any) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=np.int64))


def _intervals_of(seconds: np.ndarray[Any, Any], interval: float) -> np.ndarray[Any, Any]:
    bins: np.ndarray[Any, Any] = np.floor_divide(seconds, interval).astype(np.int64)
    return bins


# -- per-row tables ----------------------------------------------------------------------------

_SESSION_COLUMNS = [
    "session_id", "organization", "org_id", "client", "quality", "surface", "transport",
    "status", "billable_seconds", "frames", "error_code", "end_reason", "worker_id",
    "created_at", "started_at", "first_frame_at", "ended_at", "wait_seconds", "planned_length",
]  # fmt: skip


def _session_numbers(raw: RawRun) -> dict[str, np.ndarray[Any, Any]]:
    """What every table needs of every session, as numbers: status and error codes (into
    ``STATUSES`` and the store's reasons), billable seconds and times; live sessions read from
    their working state.

    Why numbers: the aggregates are all a summary run builds, and for a million sessions the
    object arrays of ids and names cost about 200 MB of transient memory they never use.
    """
    platform = raw.platform
    store = platform.sessions.store
    rows = len(store)
    numbers = {
        "status": codes(store.status_codes, rows).copy(),  # patched below: never the store's
        "error": codes(store.error_codes, rows),
        "billable_seconds": codes(store.billable_seconds, rows).copy(),
        "created_at": floats(store.created_at),
        "started_at": floats(store.started_at)[:rows],
        "first_frame_at": floats(store.first_frame_at)[:rows],
        "ended_at": floats(store.ended_at)[:rows],
    }
    now = platform.clock.now
    status_code = {status: code for code, status in enumerate(STATUSES)}
    for state in store.live_states():  # not terminal yet: their rows are not written
        row = state.number
        numbers["status"][row] = status_code[state.status]
        numbers["billable_seconds"][row] = usage_of(state, now)
        for name in ("started_at", "first_frame_at", "ended_at"):
            value = getattr(state, name)
            numbers[name][row] = math.nan if value is None else value
    return numbers


def _sessions(raw: RawRun, numbers: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    if raw.records == "summary":
        return _empty_sessions()
    platform = raw.platform
    clock = platform.clock
    store = platform.sessions.store
    rows = len(store)
    # The client that created each session and the length it planned, by session row.
    client = np.zeros(rows, dtype=np.int64)
    unknown = np.ones(rows, dtype=bool)
    planned = np.full(rows, math.nan)
    ids = pa.array(store.ids, type=pa.large_string(), memory_pool=POOL)  # the ``session_id``s
    log = raw.pool.clients
    if log is not None and len(log):
        session_kinds = [code for code, kind in enumerate(log.kinds) if kind[0] == "session"]
        # Each arrival's session row, found in bulk (Arrow's hash lookup, -1: none or unknown).
        found = pc.index_in(
            pa.array(log.resource_id, type=pa.large_string(), memory_pool=POOL),
            value_set=ids,
            memory_pool=POOL,
        )
        at = found.fill_null(-1).to_numpy().astype(np.int64)
        made = np.isin(codes(log.kind), session_kinds) & (at >= 0)
        at = at[made]
        client[at] = codes(log.client)[made]
        planned[at] = floats(log.planned_length)[made]
        unknown[at] = False
    profiles = codes(store.profile_codes)
    profile_values = store.profiles.values
    reasons = [reason or None for reason in store.reasons.values]  # "" is none
    workers = [w or None for w in store.workers.values]
    worker_codes = codes(store.worker_codes, rows).copy()  # patched below: never the store's
    for state in store.live_states():
        worker_codes[state.number] = len(workers)
        workers.append(state.worker_id)
    organization, org_id = _org_columns(raw, [p[0] for p in profile_values], profiles)
    fps = platform.config.sessions.frames_per_second
    billable = numbers["billable_seconds"]
    return pd.DataFrame(
        {
            "session_id": arrow_strings(ids),
            "organization": organization,
            "org_id": org_id,
            "client": pd.Series(pd.arrays.IntegerArray(client, unknown)),
            "quality": lookup([p[3] for p in profile_values], profiles),
            "surface": lookup([p[4] for p in profile_values], profiles),
            "transport": _optional_strings([t[1] for t in store.transports]),
            "status": lookup(STATUSES, numbers["status"]),
            "billable_seconds": _ints(billable),
            "frames": _ints(billable * fps),
            "error_code": lookup(reasons, numbers["error"]),
            "end_reason": lookup(reasons, codes(store.end_reason_codes, rows)),
            "worker_id": lookup(workers, worker_codes),
            "created_at": times(clock, numbers["created_at"]),
            "started_at": times(clock, numbers["started_at"]),
            "first_frame_at": times(clock, numbers["first_frame_at"]),
            "ended_at": times(clock, numbers["ended_at"]),
            "wait_seconds": numbers["started_at"] - numbers["created_at"],
            "planned_length": planned,
        },
        copy=False,  # fresh arrays: neither copied nor consolidated (transient room)
    )


def _empty_sessions() -> pd.DataFrame:
    frame = pd.DataFrame({c: strings([]) for c in _SESSION_COLUMNS})
    frame["client"] = pd.array([], dtype="Int64")
    for column in ("billable_seconds", "frames"):
        frame[column] = _ints([])
    for column in ("created_at", "started_at", "first_frame_at", "ended_at"):
        frame[column] = pd.Series([], dtype="datetime64[us, UTC]")
    for column in ("wait_seconds", "planned_length"):
        frame[column] = floats([])
    return frame


_CLIENT_KINDS = ("kind", "organization", "surface", "quality", "model", "final_outcome")


def _clients(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    log = raw.pool.clients
    if log is None or not len(log):
        kinds: list[tuple[Any, ...]] = []
        order = picked = client = attempts = np.zeros(0, dtype=np.int64)
        at, length = np.zeros(0), np.zeros(0)
        resource: list[str | None] = []
    else:
        order = np.argsort(codes(log.client), kind="stable")
        kinds = log.kinds
        picked = codes(log.kind)[order]
        client = codes(log.client)[order]
        at = floats(log.at)[order]
        length = floats(log.planned_length)[order]
        attempts = codes(log.attempts)[order]
        resource = log.resource_id
    by_kind = {name: lookup([k[i] for k in kinds], picked) for i, name in enumerate(_CLIENT_KINDS)}
    return pd.DataFrame(
        {
            "client": _ints(client),
            "at": times(clock, at),
            "t": at,
            "kind": by_kind["kind"],
            "organization": by_kind["organization"],
            "surface": by_kind["surface"],
            "quality": by_kind["quality"],
            "model": by_kind["model"],
            "planned_length": length,
            "attempts": _ints(attempts),
            "resource_id": _optional_strings(resource, order),
            "final_outcome": by_kind["final_outcome"],
        },
        copy=False,  # fresh arrays: neither copied nor consolidated (transient room)
    )


_CALL_KINDS = ("operation", "surface", "organization", "org_id", "outcome", "error_type")


def _api_calls(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    log = raw.pool.calls
    if log is None or not len(log):
        kinds: list[tuple[Any, ...]] = []
        picked = client = key = attempt = np.zeros(0, dtype=np.int64)
        at, retry_after, delay = np.zeros(0), np.zeros(0), np.zeros(0)
        idempotency: list[str | None] = []
        resource: list[str | None] = []
    else:
        kinds, picked = log.kinds, codes(log.kind)
        at, client, key, attempt = (
            floats(log.at),
            codes(log.client),
            codes(log.key),
            codes(log.attempt),
        )
        retry_after, delay = log.retry_afters(), log.delays()
        idempotency, resource = log.idempotency_key, log.resource_id
    by_kind = {name: lookup([k[i] for k in kinds], picked) for i, name in enumerate(_CALL_KINDS)}
    return pd.DataFrame(
        {
            "at": times(clock, at),
            "t": at,
            "client": _ints(client),
            "operation": by_kind["operation"],
            "surface": by_kind["surface"],
            "organization": by_kind["organization"],
            "org_id": by_kind["org_id"],
            "key": _ints(key),
            "attempt": _ints(attempt),
            "outcome": by_kind["outcome"],
            "error_type": by_kind["error_type"],
            "retry_after": retry_after,
            "delay": delay,
            "idempotency_key": _optional_strings(idempotency),
            "resource_id": _optional_strings(resource),
            "retried": attempt > 1,
        },
        copy=False,  # fresh arrays: neither copied nor consolidated (transient room)
    )


#: ``EventLog.id_bits``: per event, the low 64 and the high 16 of its id's random bits.
_ID_BITS = np.dtype([("low", "<u8"), ("high", "<u2")])


def _events(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    log = raw.platform.kernel.events
    count = len(log)
    # Every session event is about a session, and only ``session.ended`` has a reason (its own
    # value): what the other events show is read from their rendered payloads, by index.
    session_events = raw.platform.sessions.events
    session_types = session_events.types
    ended = session_events.handles["session.ended"]
    write = session_events.writer()
    handles = codes(log.handles)[:count]
    values = log.values
    reasons: dict[int, str | None] = {
        index: values[index] for index in np.flatnonzero(handles == ended).tolist()
    }
    del handles
    object_types: dict[int, str | None] = {}

    def text(index: int) -> str:
        """The text of event ``index``, which ``event_texts`` does not assemble: another
        producer's, or a session event not in the columns (kept whole)."""
        payload = log.payload(index)
        if type(payload) is tuple and payload[0] in session_types:
            if payload[0] == ended:
                reasons[index] = payload[4]
            return write(payload)
        rendered = log.render(payload)
        obj = rendered.get("object")
        object_types[index] = obj.get("object") if isinstance(obj, dict) else None
        reasons[index] = rendered.get("reason")
        return json.dumps(rendered, sort_keys=True, separators=(",", ":"))

    store = raw.platform.sessions.store
    payloads = arrow_strings(event_texts(log, session_events, store, clock, text))
    # The other columns once the texts are written: the room the texts' parts took while they
    # were assembled (about 50 MB at 100,000 sessions) is then free for their conversions.
    at = floats(log.times)
    # An id's 80 random bits are kept as ten little-endian bytes: its low 64 bits, then 16.
    bits = np.frombuffer(log.id_bits, dtype=_ID_BITS, count=count)
    high = (epoch_ms(clock, at).astype(np.uint64) << np.uint64(16)) | bits["high"].astype(np.uint64)
    low = bits["low"].astype(np.uint64)
    del bits  # a view of the log's buffer, which must stay free to grow
    event_ids = ulids(high, low, "evt_")
    del high, low
    moments = times(clock, at)
    picked = codes(log.kind_codes)
    kinds = log.kinds.values
    organization, org_id = _org_columns(raw, [k[1] for k in kinds], picked)
    types = lookup([k[0] for k in kinds], picked)
    del picked
    subjects = _optional_strings(log.subjects)
    return pd.DataFrame(
        {
            "event_id": event_ids,
            "at": moments,
            "t": at,
            "type": types,
            "organization": organization,
            "org_id": org_id,
            "object_type": _sparse(object_types, count, "session"),
            "object_id": subjects,
            "reason": _sparse(reasons, count, None),
            "data": payloads,
        },
        copy=False,  # fresh arrays: neither copied nor consolidated (transient room)
    )


def _ledger(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    ledger = raw.platform.billing.ledger
    count = 0 if raw.records == "summary" else len(ledger)
    t = floats(ledger.times)[:count]
    organization, org_id = _org_columns(raw, ledger.orgs.values, codes(ledger.org_codes)[:count])
    kinds = codes(ledger.kinds)[:count]
    attribution = codes(ledger.attribution_codes)[:count]
    credits = codes(ledger.credits)[:count]
    deltas = {
        name: codes(getattr(ledger, f"{name}s"))[:count]
        for name in ("rollover_delta", "included_delta", "granted_delta")
    }
    debits = [code for code, kind in enumerate(ENTRY_KINDS) if KIND_RULES[kind].effect == "debit"]
    debit = np.isin(kinds, debits)
    change = deltas["rollover_delta"] + deltas["included_delta"] + deltas["granted_delta"]
    values = ledger.attributions.values
    by_field = {
        name: lookup([v[i] for v in values], attribution) for i, name in enumerate(ATTRIBUTION)
    }
    return pd.DataFrame(
        {
            "id": ulids(
                np.frombuffer(ledger.ulids.high, dtype=np.uint64)[:count],
                np.frombuffer(ledger.ulids.low, dtype=np.uint64)[:count],
                "le_",
            ),
            "at": times(clock, t),
            "seq": _ints(np.arange(count)),
            "kind": lookup(ENTRY_KINDS, kinds),
            "organization": organization,
            "org_id": org_id,
            "t": t,
            "credits": _ints(credits),
            "rollover_delta": _ints(deltas["rollover_delta"]),
            "included_delta": _ints(deltas["included_delta"]),
            "granted_delta": _ints(deltas["granted_delta"]),
            "session_id": _optional_strings(ledger.session_ids[:count]),
            "run_id": _optional_strings(ledger.run_ids[:count]),
            "model": by_field["model"],
            "internal": pd.Series(codes(ledger.internal)[:count].astype(bool)),
            "billing_surface": by_field["billing_surface"],
            "quality": by_field["quality"],
            "speech_billing_mode": by_field["speech_billing_mode"],
            "embed_id": by_field["embed_id"],
            "avatar_id": by_field["avatar_id"],
            "operation": by_field["operation"],
            "pricing_version": by_field["pricing_version"],
            "billable_seconds": _ints(codes(ledger.billable_seconds)[:count]),
            "note": by_field["note"],
            "overage": _ints(np.where(debit, credits + change, 0)),
        }
    )


# -- tables that do not grow with traffic -------------------------------------------------------


def _utilization(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    samples = raw.samples
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
    capacity = frame["capacity"].where(frame["capacity"] > 0)
    frame["utilization"] = (frame["busy"] / capacity).astype("float64")
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
    """Sessions per interval: created, placed (with their waits), started, and finished by
    final status (with their billable seconds)."""
    interval = raw.scenario.sample_every
    count = math.floor(raw.end / interval + 1e-9) + 1
    status = columns["status"]
    no_capacity_code = raw.platform.sessions.store.reasons.find("no_capacity")
    created = _intervals_of(columns["created_at"], interval)
    placed_mask = ~np.isnan(columns["started_at"])
    placed = _intervals_of(columns["started_at"][placed_mask], interval)
    waits = (columns["started_at"] - columns["created_at"])[placed_mask]
    framed = ~np.isnan(columns["first_frame_at"])
    finished = ~np.isnan(columns["ended_at"])
    ends = np.where(finished, columns["ended_at"], 0.0)
    ended_at = _intervals_of(ends, interval)

    def per(bins: np.ndarray[Any, Any], weights: Any = None) -> np.ndarray[Any, Any]:
        return np.bincount(bins, weights=weights, minlength=count)[:count]

    wait_max = np.zeros(count)
    if len(placed):
        np.maximum.at(wait_max, np.minimum(placed, count - 1), waits)
    t = np.arange(count) * interval
    frame = pd.DataFrame(
        {
            "interval": _ints(np.arange(count)),
            "at": times(raw.platform.clock, t.astype(float)),
            "t": t.astype(float),
            "sessions_created": _ints(per(created)),
            "sessions_placed": _ints(per(placed)),
            "sessions_started": _ints(
                per(_intervals_of(columns["first_frame_at"][framed], interval))
            ),
            "waited": _ints(per(placed, (waits > 1e-9).astype(float)).round()),
            "wait_seconds_sum": per(placed, waits),
            "wait_seconds_max": wait_max,
        }
    )
    for name in ("ended", "failed", "canceled"):
        mask = finished & (status == STATUSES.index(name))
        frame[f"sessions_{name}"] = _ints(per(ended_at[mask]))
    no_capacity = finished & (columns["error"] == no_capacity_code)
    frame["no_capacity"] = _ints(per(ended_at[no_capacity]))
    frame["billable_seconds"] = _ints(
        per(ended_at[finished], columns["billable_seconds"][finished].astype(float)).round()
    )
    return frame


def _waits(columns: dict[str, np.ndarray[Any, Any]]) -> pd.DataFrame:
    placed = ~np.isnan(columns["started_at"])
    waits = (columns["started_at"] - columns["created_at"])[placed]
    edges = np.array(WAIT_EDGES)
    counts, _ = np.histogram(waits, bins=edges)
    return pd.DataFrame(
        {"low": edges[:-1], "high": edges[1:], "sessions": _ints(counts)},
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


def _ledger_daily(raw: RawRun) -> pd.DataFrame:
    """Ledger rows per organization, UTC day, kind and billing surface (sums), sorted by those
    (surfaces by name, none first).

    Grouped on one integer key per row rather than a DataFrame of the rows: a pandas group-by
    of a month's ledger (1.25 million rows at 1M sessions) held about 230 MB at once, a fifth of
    the month's peak, to make a table of a few thousand rows.
    """
    clock = raw.platform.clock
    ledger = raw.platform.billing.ledger
    count = len(ledger)
    day_start = clock.epoch.replace(hour=0, minute=0, second=0, microsecond=0)
    offset = (clock.epoch - day_start).total_seconds()
    day = np.floor_divide(floats(ledger.times) + offset, 86_400).astype(np.int64)
    surface_index = ATTRIBUTION.index("billing_surface")
    attributions = ledger.attributions.values
    names = sorted({v[surface_index] or "" for v in attributions} | {""})
    rank = {name: i for i, name in enumerate(names)}
    by_attribution = np.array([rank[v[surface_index] or ""] for v in attributions], dtype=np.int64)
    surface = by_attribution[codes(ledger.attribution_codes)] if count else day
    # One key per row, ordered as (organization, day, kind, surface) are.
    sizes = (int(day.max()) + 1 if count else 1, len(ENTRY_KINDS), len(names))
    key = codes(ledger.org_codes) * sizes[0] + day
    key = (key * sizes[1] + codes(ledger.kinds)) * sizes[2] + surface
    order = np.argsort(key, kind="stable")
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([count > 0], key[1:] != key[:-1])))

    def sums(column: array[int]) -> np.ndarray[Any, Any]:
        return np.add.reduceat(codes(column)[order], starts) if count else codes(column)

    first = key[starts]
    first, surfaces = np.divmod(first, sizes[2])
    first, kinds = np.divmod(first, sizes[1])
    orgs, days = np.divmod(first, sizes[0])
    dates = np.datetime64(day_start.date()) + days.astype("timedelta64[D]")
    organization, org_id = _org_columns(raw, ledger.orgs.values, orgs)
    return pd.DataFrame(
        {
            "organization": organization,
            "org_id": org_id,
            "day": strings(np.datetime_as_string(dates, unit="D")),
            "kind": lookup(ENTRY_KINDS, kinds),
            "billing_surface": lookup([name or None for name in names], surfaces),
            "rows": _ints(np.diff(np.append(starts, count))),
            "credits": _ints(sums(ledger.credits)),
            "billable_seconds": _ints(sums(ledger.billable_seconds)),
        }
    )


def _trimmed(table: pd.DataFrame, release: bool) -> pd.DataFrame:
    """``table``, once what building it freed went back to the system (``release`` only)."""
    if release:
        return_free_memory()
    return table


def collect(raw: RawRun, *, release: bool = False) -> RunResult:
    """The tables of one raw run.

    First the tables that do not grow with traffic, while the large ones are not built yet:
    their conversions take room for a while, which is then found in what the run left free
    rather than on top of every large table (built last, they added about 15 MB to a
    100,000-session month's peak at ``full``, which is its end).

    ``release``: the caller hands the run over (``run_scenario``, whose run nobody else sees),
    so each large record is dropped as soon as the last table built from it holds it: the event
    log once the events table is built (the first large one: it is the largest), the ledger's
    rows once ``ledger`` is, the clients' request log once ``api_calls`` is, the session store
    once ``sessions`` is, their arrival log once ``clients`` is. Why: those records' columns
    are returned to the system (large arrays and lists), so the tables built after them grow
    into that memory instead of on top of it (a 100,000-session month at ``full``: its peak
    about 50 MB lower).

    The cycle collector runs rarely meanwhile (``rare_collections``): the tables' conversions
    make many short-lived containers, and a full pass over the run's records finds nothing.

    A run collected with ``release`` is gone: collecting it again raises ``ValueError`` and its
    platform refuses every later call (``Platform.hand_over``), rather than either answering
    from emptied records."""
    if raw.platform.handed_over:
        raise ValueError(
            f"run {raw.scenario.name!r} (seed {raw.seed}) was collected with release=True: "
            "its records were dropped, so it cannot be collected again"
        )
    if release:
        raw.platform.hand_over()
    with rare_collections():
        return _collect(raw, release)


def _collect(raw: RawRun, release: bool) -> RunResult:
    if release:  # what simulating left free, returned before the first conversions
        return_free_memory()
    columns = _session_numbers(raw)
    intervals, waits = _intervals(raw, columns), _waits(columns)
    utilization, runs, organizations = _utilization(raw), _runs(raw), _organizations(raw)
    ledger_daily = _ledger_daily(raw)
    usage, usage_daily = _usage(raw)
    requests, arrivals = _requests(raw), _arrivals(raw)  # the tallies, from the clients' logs
    events = _events(raw)
    if release:
        raw.platform.kernel.events.release()
        return_free_memory()
    # The ledger next: its conversions need room for a while, best found before the rest.
    ledger = _ledger(raw)
    if release:
        raw.platform.billing.ledger.release()  # ``ledger_daily`` is built already
    ledger = _trimmed(ledger, release)
    sessions = _sessions(raw, columns)
    del columns
    if release:
        raw.platform.sessions.store.release()
    sessions = _trimmed(sessions, release)
    api_calls = _api_calls(raw)
    if release:
        raw.pool.calls = None
    api_calls = _trimmed(api_calls, release)
    clients = _clients(raw)
    if release:
        raw.pool.clients = None
    clients = _trimmed(clients, release)
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
