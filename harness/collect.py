"""Records → tidy pandas DataFrames (NB-2): one row per thing, one column per field.

Why a separate collector (Mesa's ``datacollection`` idea): the runner produces flat immutable
records (session snapshots, events, ledger rows, pool samples, the clients' call log); turning
them into tables is a pure function of those records. Notebooks and sweeps read only these
tables, never live simulator objects.

Conventions: instants are timezone-aware UTC datetimes (``datetime64[us, UTC]``) next to a float
``t`` in simulated seconds since the scenario start; durations are float seconds; ids and codes
are strings; a value that does not apply is missing (``NaT``/``NaN``/``None``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from sim.clock import Clock

if TYPE_CHECKING:
    from harness.runner.engine import RawRun

__all__ = ["TABLES", "RunResult", "collect"]

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
)


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


def _times(clock: Clock, values: Iterable[float | None]) -> pd.Series:
    moments = [pd.NaT if v is None else pd.Timestamp(clock.datetime_at(v)) for v in values]
    return pd.Series(moments, dtype="datetime64[us, UTC]")


def _frame(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(columns))


def _floats(values: Iterable[float | None]) -> pd.Series:
    return pd.Series([float("nan") if v is None else float(v) for v in values], dtype="float64")


def _sessions(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    names = {o.id: o.name for o in raw.organizations}
    clients = {c.resource_id: c for c in raw.pool.clients if c.kind == "session" and c.resource_id}
    snaps = raw.platform.sessions.sessions()
    frame = _frame(
        [
            {
                "session_id": s.id,
                "organization": names.get(s.org_id, s.org_id),
                "org_id": s.org_id,
                "client": clients[s.id].client if s.id in clients else None,
                "quality": s.quality,
                "surface": s.billing_surface,
                "transport": s.transport_type,
                "status": s.status,
                "billable_seconds": s.billable_seconds,
                "frames": s.frames,
                "error_code": s.error_code,
                "end_reason": s.end_reason,
                "worker_id": s.worker_id,
            }
            for s in snaps
        ],
        ["session_id", "organization", "org_id", "client", "quality", "surface", "transport",
         "status", "billable_seconds", "frames", "error_code", "end_reason", "worker_id"],
    )  # fmt: skip
    frame["client"] = frame["client"].astype("Int64")
    frame["billable_seconds"] = frame["billable_seconds"].astype("int64")
    frame["frames"] = frame["frames"].astype("int64")
    for column in ("created_at", "started_at", "first_frame_at", "ended_at"):
        frame[column] = _times(clock, [getattr(s, column) for s in snaps])
    frame["wait_seconds"] = _floats(
        [None if s.started_at is None else s.started_at - s.created_at for s in snaps]
    )
    frame["planned_length"] = _floats(
        [clients[s.id].planned_length if s.id in clients else None for s in snaps]
    )
    return frame


def _clients(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    rows = [{f.name: getattr(c, f.name) for f in fields(c)} for c in raw.pool.clients]
    columns = [f.name for f in fields(raw.pool.clients[0])] if raw.pool.clients else [
        "client", "at", "kind", "organization", "surface", "quality", "model", "planned_length",
        "attempts", "resource_id", "final_outcome",
    ]  # fmt: skip
    frame = _frame(sorted(rows, key=lambda r: r["client"]), columns)
    frame = frame.rename(columns={"at": "t"})
    frame["t"] = frame["t"].astype("float64")
    frame["planned_length"] = _floats(frame["planned_length"].tolist())
    frame["attempts"] = frame["attempts"].astype("int64")
    frame["client"] = frame["client"].astype("int64")
    frame.insert(1, "at", _times(clock, frame["t"].tolist()))
    return frame


_CALL_COLUMNS = [
    "client", "operation", "surface", "organization", "org_id", "key", "attempt", "outcome",
    "error_type", "retry_after", "delay", "idempotency_key", "resource_id",
]  # fmt: skip


def _api_calls(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    calls = raw.pool.calls
    frame = _frame([{c: getattr(call, c) for c in _CALL_COLUMNS} for call in calls], _CALL_COLUMNS)
    frame.insert(0, "t", _floats([c.at for c in calls]))
    frame.insert(0, "at", _times(clock, [c.at for c in calls]))
    for column in ("client", "key", "attempt"):
        frame[column] = frame[column].astype("int64")
    frame["retried"] = frame["attempt"] > 1
    frame["retry_after"] = _floats([c.retry_after for c in calls])
    frame["delay"] = _floats([c.delay for c in calls])
    return frame


def _events(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    names = {o.id: o.name for o in raw.organizations}
    events = list(raw.platform.kernel.events)
    rows = []
    for e in events:
        obj = e.data.get("object")
        obj = obj if isinstance(obj, dict) else {}
        rows.append(
            {
                "event_id": e.id,
                "type": e.type,
                "organization": names.get(e.org_id, e.org_id),
                "org_id": e.org_id,
                "object_type": obj.get("object"),
                "object_id": obj.get("id"),
                "reason": e.data.get("reason"),
                "data": json.dumps(dict(e.data), sort_keys=True, separators=(",", ":")),
            }
        )
    frame = _frame(
        rows, ["event_id", "type", "organization", "org_id", "object_type", "object_id",
               "reason", "data"]
    )  # fmt: skip
    frame.insert(1, "t", _floats([e.at for e in events]))
    frame.insert(1, "at", _times(clock, [e.at for e in events]))
    return frame


def _ledger(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    names = {o.id: o.name for o in raw.organizations}
    entries = raw.platform.billing.entries()
    records = [e.as_record() for e in entries]
    columns = list(records[0]) if records else ["id", "seq", "kind", "org_id", "at", "credits"]
    frame = _frame(records, columns).rename(columns={"at": "t"})
    frame["t"] = _floats([e.at for e in entries])
    frame.insert(1, "at", _times(clock, [e.at for e in entries]))
    frame.insert(4, "organization", [names.get(e.org_id, e.org_id) for e in entries])
    return frame


def _utilization(raw: RawRun) -> pd.DataFrame:
    clock = raw.platform.clock
    samples = raw.samples
    frame = pd.DataFrame(
        {
            "at": _times(clock, [s.at for s in samples]),
            "t": _floats([s.at for s in samples]),
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
    names = {o.id: o.name for o in raw.organizations}
    runs = raw.platform.runs.runs()
    frame = _frame(
        [
            {
                "run_id": r.id,
                "organization": names.get(r.org_id, r.org_id),
                "org_id": r.org_id,
                "model": r.model,
                "operation": r.operation,
                "status": str(r.status.value),
                "credits_charged": r.charged,
                "error_code": None if r.error is None else r.error.get("code"),
            }
            for r in runs
        ],
        ["run_id", "organization", "org_id", "model", "operation", "status", "credits_charged",
         "error_code"],
    )  # fmt: skip
    frame["credits_charged"] = frame["credits_charged"].astype("int64")
    for column in ("created_at", "started_at", "completed_at"):
        frame[column] = _times(clock, [getattr(r, column) for r in runs])
    return frame


def _usage(raw: RawRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    summary = []
    daily = []
    for org, timezone, body in raw.usage:
        summary.append(
            {
                "organization": org,
                "timezone": timezone,
                "billable_seconds": int(body["billable_seconds"]),
                "sessions": int(body["sessions"]),
                "credits_charged": int(body["credits_charged"]),
            }
        )
        for day, surfaces in body["daily_credits_by_billing_surface"].items():
            for surface, credits in surfaces.items():
                daily.append(
                    {
                        "organization": org,
                        "timezone": timezone,
                        "day": day,
                        "surface": surface,
                        "credits": int(credits),
                    }
                )
    usage = _frame(
        summary, ["organization", "timezone", "billable_seconds", "sessions", "credits_charged"]
    )
    for column in ("billable_seconds", "sessions", "credits_charged"):
        usage[column] = usage[column].astype("int64")
    usage_daily = _frame(daily, ["organization", "timezone", "day", "surface", "credits"])
    usage_daily["credits"] = usage_daily["credits"].astype("int64")
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
    return pd.DataFrame(rows)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns left as ``object`` (all missing, or mixed with None) become the string dtype."""
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype("str")
    return frame


def collect(raw: RawRun) -> RunResult:
    """The tables of one raw run."""
    usage, usage_daily = _usage(raw)
    return RunResult(
        scenario=raw.scenario.name,
        seed=raw.seed,
        duration=raw.end,
        sessions=_typed(_sessions(raw)),
        clients=_typed(_clients(raw)),
        api_calls=_typed(_api_calls(raw)),
        events=_typed(_events(raw)),
        ledger=_typed(_ledger(raw)),
        utilization=_typed(_utilization(raw)),
        runs=_typed(_runs(raw)),
        usage=_typed(usage),
        usage_daily=_typed(usage_daily),
        organizations=_typed(_organizations(raw)),
    )
