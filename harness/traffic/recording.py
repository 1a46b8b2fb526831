"""Recorded traffic: one session per row, read from any of its three forms into one type.

A recording is what a deployment's sessions looked like: when each was created, how long its
client kept it, its quality, billing surface and organization. It comes from ``avatar-sim
capture`` (Parquet), from a user's own file (CSV or Parquet, written by hand or exported from
logs), or from a run's own ``tables/sessions.parquet`` (``avatar-sim run``/``demo``). The three
differ only in which columns they carry, so one reader takes them all, checks every column it
uses, and says which file, column and row are wrong.

The columns (every one optional but the time of creation; other columns are ignored):

=================  ==================================================  =========================
column             what                                                type, unit
=================  ==================================================  =========================
``created_at``     when the service accepted the create                ISO-8601 instant (UTC if
                                                                       no offset is written)
``offset_seconds`` instead of ``created_at``: seconds since the        float, seconds >= 0
                   recording's start
``session_id``     the session's id (default ``row-N``)                text
``organization``   a label of the organization (default: none, the     text
                   scenario draws one by weight)
``plan``           the organization's plan key                         text
``started_at``     when a worker took it                               instant
``first_frame_at`` its first frame                                     instant
``status``         its last status (``ended``, ``failed``, ...)        one of the session
                                                                       statuses
``error_code``     why it failed (``no_capacity``, ...)                text
``billable_seconds`` its billed seconds                                float, seconds >= 0
``length_seconds`` how long the client kept it from its first frame    float, seconds >= 0
                   (default: ``planned_length`` in a run's table, else
                   ``billable_seconds`` of a session that had a first
                   frame; unknown otherwise)
``quality``        ``mock``, ``lite``, ``standard`` or ``pro``         text (default: the
                                                                       service's default)
``surface``        the billing surface (``api``, ``embed``, ...)       text (default ``api``)
=================  ==================================================  =========================

Why a length and not an end: the contract shows no end time of a session, only its billable
seconds (whole seconds from the first frame, rounded up), so that is what a capture records as
the length; a run knows what each client planned, which is better still. A session that never
reached its first frame has no length: the client asked for one, but the recording cannot say
which, and a replay draws it from the scenario's ``sessions.length``.

Why a start: offsets count from the recording's ``start``, the ``--since`` of a capture (kept
in the Parquet file's metadata) or else its first session's creation, so that a recording of a
day starting at midnight replays from midnight even if the first session came at 00:07.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sim.config import BILLING_SURFACES, QUALITIES, SessionConfig
from sim.lifecycle import STATUSES

__all__ = [
    "COLUMNS",
    "METADATA_KEY",
    "Recording",
    "RecordingError",
    "load_recording",
    "read_recording",
    "recording_from_frame",
]

#: The columns a recording holds, in order, once read (``Recording.frame``).
COLUMNS: tuple[str, ...] = (
    "session_id", "organization", "plan", "created_at", "offset_seconds", "started_at",
    "first_frame_at", "status", "error_code", "billable_seconds", "length_seconds", "quality",
    "surface",
)  # fmt: skip
_INSTANTS = ("created_at", "started_at", "first_frame_at")
_SECONDS = ("offset_seconds", "billable_seconds", "length_seconds", "planned_length")
_CHOICES: dict[str, tuple[str, ...]] = {
    "quality": QUALITIES,
    "surface": BILLING_SURFACES,
    "status": tuple(STATUSES),
}
#: The key of a Parquet file's metadata where a capture keeps what it knows of the recording.
METADATA_KEY = b"avatar_sim.recording"
_SHOWN = 3  # bad rows named per column


class RecordingError(ValueError):
    """A recording that cannot be used: ``source`` and one line per problem, each naming its
    column and rows."""

    def __init__(self, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        count = len(self.problems)
        header = f"{source}: not a usable recording ({count} problem{'s' if count != 1 else ''})"
        super().__init__("\n".join([header, *(f"  {source}: {p}" for p in self.problems)]))


@dataclass(frozen=True)
class Recording:
    """Sessions as recorded, sorted by ``offset_seconds`` (columns ``COLUMNS``).

    ``start`` is the instant of offset 0 (``None`` for a recording written in offsets only);
    ``info`` what the capture wrote about it (its target, key label, window)."""

    frame: pd.DataFrame
    source: str
    start: pd.Timestamp | None
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def span(self) -> float:
        """Seconds from the start to the last session's creation (0 when empty)."""
        offsets = self.frame["offset_seconds"]
        return float(offsets.iloc[-1]) if len(offsets) else 0.0

    def organizations(self) -> list[str]:
        """The organization labels present, sorted."""
        return sorted({str(o) for o in self.frame["organization"].dropna()})

    def since(self, moment: datetime | pd.Timestamp) -> Recording:
        """The sessions created at or after ``moment``, with offsets counted from it."""
        if self.start is None:
            raise ValueError("a recording written in offsets has no instants to start from")
        moment = _utc(moment)
        shift = (moment - self.start).total_seconds()
        frame = self.frame[self.frame["offset_seconds"] >= shift].copy()
        frame["offset_seconds"] = frame["offset_seconds"] - shift
        return Recording(frame.reset_index(drop=True), self.source, moment, dict(self.info))

    def write(self, path: str | Path) -> Path:
        """Write as Parquet (with ``start`` and ``info`` in the file's metadata) or, for a
        ``.csv`` name, as CSV (instants in ISO-8601 with ``Z``)."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        frame = self.frame[list(COLUMNS)]
        if out.suffix.lower() == ".csv":
            text = frame.copy()
            for name in _INSTANTS:
                text[name] = text[name].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            text.to_csv(out, index=False)
            return out
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = {"start": None if self.start is None else self.start.isoformat(), **self.info}
        schema_meta = {**(table.schema.metadata or {}), METADATA_KEY: json.dumps(meta).encode()}
        pq.write_table(table.replace_schema_metadata(schema_meta), out)
        return out


def read_recording(path: str | Path) -> Recording:
    """The recording in ``path`` (``.csv``, else Parquet), checked column by column;
    ``RecordingError`` names the file, the column and the rows of every problem."""
    source = str(path)
    file = Path(path)
    if not file.is_file():
        raise RecordingError(source, ["no such file"])
    csv = file.suffix.lower() == ".csv"
    try:
        if csv:
            frame = pd.read_csv(file, dtype=str, keep_default_na=False)
        else:
            table = pq.read_table(file)
    except (OSError, ValueError, pa.ArrowException) as error:
        raise RecordingError(source, [f"cannot be read: {error}"]) from None
    if csv:
        return recording_from_frame(frame, source, lines=True)
    info = json.loads((table.schema.metadata or {}).get(METADATA_KEY, b"{}"))
    start = info.pop("start", None)
    return recording_from_frame(table.to_pandas(), source, start=start, info=info)


#: Recordings read by ``load_recording``, by (path, modification time, size): a scenario is
#: checked, then run, often in many points of a sweep, and reads its recording once.
_LOADED: dict[tuple[str, int, int], Recording] = {}
_LOADED_MAX = 8


def load_recording(path: str | Path) -> Recording:
    """``read_recording``, read once while the file stays the same (a few kept at a time)."""
    file = Path(path)
    try:
        status = file.stat()
    except OSError:
        return read_recording(path)
    key = (str(file.resolve()), status.st_mtime_ns, status.st_size)
    recording = _LOADED.get(key)
    if recording is None:
        recording = read_recording(path)
        if len(_LOADED) >= _LOADED_MAX:
            del _LOADED[next(iter(_LOADED))]
        _LOADED[key] = recording
    return recording


def recording_from_frame(
    frame: pd.DataFrame,
    source: str = "<recording>",
    *,
    start: datetime | pd.Timestamp | str | None = None,
    info: dict[str, Any] | None = None,
    lines: bool = False,
) -> Recording:
    """A recording from a data frame of any of the three forms (see the module docstring).

    ``lines``: the rows came from a CSV file, so problems name file lines (the header is line 1)
    instead of rows. ``start``: the instant of offset 0 (default: the first creation)."""
    reader = _Columns(frame, lines)
    out = pd.DataFrame(index=frame.index)
    out["session_id"] = reader.text("session_id")
    out["session_id"] = out["session_id"].fillna(
        pd.Series([f"row-{i + 1}" for i in range(len(frame))], index=frame.index)
    )
    out["organization"] = reader.text("organization")
    out["plan"] = reader.text("plan")
    for name in _INSTANTS:
        out[name] = reader.instant(name)
    seconds = {name: reader.seconds(name) for name in _SECONDS}
    out["status"] = reader.choice("status", None)
    out["error_code"] = reader.text("error_code")
    default_quality = SessionConfig().default_quality
    out["quality"] = reader.choice("quality", default_quality)
    out["surface"] = reader.choice("surface", "api")
    if "created_at" not in frame and "offset_seconds" not in frame:
        reader.problems.append(
            "no column created_at (an instant) or offset_seconds (seconds since the start): "
            "each session needs the time it was created"
        )
    elif "offset_seconds" not in frame:
        reader.require("created_at")
    else:
        reader.require("offset_seconds")
    if reader.problems:
        raise RecordingError(source, reader.problems)
    origin = None if start is None else _utc(start)
    created: pd.Series = out["created_at"]
    if "offset_seconds" in frame:
        out["offset_seconds"] = seconds["offset_seconds"]
        if "created_at" not in frame:
            origin = None
        elif origin is None:  # both written (``Recording.write``): the start they agree on
            anchors = (created - pd.to_timedelta(out["offset_seconds"], unit="s")).dropna()
            origin = _utc(anchors.iloc[0]) if len(anchors) else None
    else:
        if origin is None and len(out):
            origin = _utc(created.min())
        since: pd.Series = created - origin if origin is not None else created
        out["offset_seconds"] = since.dt.total_seconds() if origin is not None else math.nan
    billable = seconds["billable_seconds"]
    if "length_seconds" in frame:
        length = seconds["length_seconds"]
    elif "planned_length" in frame:
        length = seconds["planned_length"]
    else:
        ran = out["first_frame_at"].notna() | (billable > 0)
        length = billable.where(ran)
    out["billable_seconds"] = billable
    out["length_seconds"] = length
    ordered = out[list(COLUMNS)].sort_values("offset_seconds", kind="stable")
    return Recording(ordered.reset_index(drop=True), source, origin, dict(info or {}))


class _Columns:
    """Reads the columns of a raw frame one by one, noting each problem with its rows."""

    def __init__(self, frame: pd.DataFrame, lines: bool) -> None:
        self.frame = frame
        self.lines = lines
        self.problems: list[str] = []

    def _where(self, bad: pd.Series) -> str:
        positions = np.flatnonzero(bad.to_numpy())
        offset = 2 if self.lines else 1
        shown = ", ".join(str(p + offset) for p in positions[:_SHOWN])
        more = f" (and {len(positions) - _SHOWN} more)" if len(positions) > _SHOWN else ""
        word = "line" if self.lines else "row"
        return f"{word}{'s' if len(positions) > 1 else ''} {shown}{more}"

    def _check(self, name: str, bad: pd.Series, what: str, values: pd.Series) -> None:
        if bad.any():
            first = values[bad].iloc[0]
            first = first.item() if isinstance(first, np.generic) else first
            self.problems.append(f"column {name}: {what} ({self._where(bad)}; e.g. {first!r})")

    def _raw(self, name: str) -> pd.Series | None:
        if name not in self.frame:
            return None
        if list(self.frame.columns).count(name) > 1:
            self.problems.append(f"column {name}: appears more than once")
            return None
        return self.frame[name]

    @staticmethod
    def _missing(raw: pd.Series) -> pd.Series:
        empty = raw.astype("string").str.strip().fillna("") == ""
        return raw.isna() | empty

    def require(self, name: str) -> None:
        """Every row has a value in ``name``."""
        raw = self._raw(name)
        if raw is not None and (missing := self._missing(raw)).any():
            self.problems.append(f"column {name}: a value is required ({self._where(missing)})")

    def text(self, name: str) -> pd.Series:
        raw = self._raw(name)
        if raw is None:
            return pd.Series(pd.NA, index=self.frame.index, dtype="str")
        values = raw.astype("str").str.strip()
        return values.where(~self._missing(raw)).astype("str")

    def choice(self, name: str, default: str | None) -> pd.Series:
        allowed = _CHOICES[name]
        raw = self._raw(name)
        if raw is None:
            values = pd.Series(default, index=self.frame.index, dtype="object")
        else:
            missing = self._missing(raw)
            values = raw.astype("object").where(~missing, default)
            present = values.notna()
            text = values[present].astype(str).str.strip()
            values.loc[present] = text
            bad = present & ~values.isin(allowed)
            self._check(name, bad, f"must be one of {', '.join(allowed)}", values)
        known = values.where(values.isin(allowed))
        return pd.Series(pd.Categorical(known, categories=sorted(allowed)), index=known.index)

    def seconds(self, name: str) -> pd.Series:
        raw = self._raw(name)
        if raw is None:
            return pd.Series(math.nan, index=self.frame.index, dtype="float64")
        missing = self._missing(raw)
        numbers = pd.to_numeric(raw.where(~missing), errors="coerce").astype("float64")
        unreadable = ~missing & numbers.isna()
        self._check(name, unreadable, "not a number of seconds", raw)
        finite = numbers.notna() & np.isfinite(numbers.fillna(0.0))
        self._check(name, numbers.notna() & ~finite, "must be finite", raw)
        self._check(name, finite & (numbers < 0), "cannot be negative", raw)
        return numbers.where(finite & (numbers >= 0))

    def instant(self, name: str) -> pd.Series:
        raw = self._raw(name)
        if raw is None:
            return pd.Series(pd.NaT, index=self.frame.index, dtype="datetime64[us, UTC]")
        if pd.api.types.is_datetime64_any_dtype(raw.dtype):
            parsed = raw if raw.dt.tz is not None else raw.dt.tz_localize("UTC")
            return _as_utc(parsed)
        missing = self._missing(raw)
        parsed = _parse_instants(raw.where(~missing))
        unreadable = ~missing & parsed.isna()
        self._check(name, unreadable, "not an ISO-8601 instant such as 2026-01-05T09:30:00Z", raw)
        return _as_utc(parsed)


def _parse_instants(values: pd.Series) -> pd.Series:
    parse: Callable[..., Any] = pd.to_datetime
    try:
        parsed = parse(values, utc=True, errors="coerce", format="ISO8601")
    except (ValueError, TypeError):  # a mix pandas cannot read at once: one value at a time
        parsed = values.map(lambda v: parse(v, utc=True, errors="coerce", format="ISO8601"))
    return pd.Series(parsed, index=values.index)


def _as_utc(values: pd.Series) -> pd.Series:
    converted: pd.Series = values.dt.tz_convert("UTC").astype("datetime64[us, UTC]")
    return converted


def _utc(moment: datetime | pd.Timestamp | str) -> pd.Timestamp:
    """``moment`` as a UTC timestamp (one without a zone is taken as UTC)."""
    stamp = pd.Timestamp(moment)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
