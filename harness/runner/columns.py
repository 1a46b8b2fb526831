"""Bulk conversions from the stores' exports (``sim.columns.Table``) to pandas columns.

The domain exports its records as raw values of declared kinds (simulated seconds, codes into a
vocabulary, the parts of ids); ``frame`` turns a whole table into a data frame, one converter per
kind, each a few vectorized operations with exactly the arithmetic the domain uses for a single
value (``sim.clock``, ``sim.ids``), so a timestamp or an id read in bulk is the one read alone.
Categories become pandas categoricals whose categories are the distinct values, sorted.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import islice
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sim.clock import Clock
from sim.columns import Column, Table

__all__ = [
    "POOL",
    "Epoch",
    "RunEpoch",
    "arrow_strings",
    "codes",
    "epoch_ms",
    "floats",
    "lookup",
    "relabel",
    "strings",
    "text_column",
    "times",
    "to_frame",
    "to_series",
    "ulids",
    "unix_us",
]

_CROCKFORD = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", dtype=np.uint8)
#: The allocator of the Arrow buffers the tables are built in. Not pyarrow's default (mimalloc),
#: which keeps what a month's tables freed resident: the system allocator returns it.
POOL = pa.system_memory_pool()
_NAT = np.iinfo(np.int64).min
#: Strings per Arrow chunk of a text column: a multiple of 1,024, the rows Parquet writes at a
#: time, so a chunked column is written as one array would be.
_TEXT_CHUNK = 4096


class Epoch(Protocol):
    """What the conversions read of a run's clock: its epoch, as a datetime and in microseconds
    since the Unix epoch (a ``sim.clock.Clock`` is one, and so is ``RunEpoch``)."""

    @property
    def epoch(self) -> datetime: ...

    @property
    def epoch_us(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RunEpoch:
    """A clock's epoch, kept apart from the clock: what a run's tables are read with once the
    platform that made them is gone."""

    epoch: datetime
    epoch_us: int

    @classmethod
    def of(cls, clock: Clock) -> RunEpoch:
        return cls(clock.epoch, clock.epoch_us)


def floats(values: Sequence[float] | array[float] | np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A float64 array of a column (NaN stays NaN)."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=np.float64).copy() if len(values) else np.zeros(0)
    return np.asarray(values, dtype=np.float64)


def codes(values: Sequence[int] | array[int], length: int | None = None) -> np.ndarray[Any, Any]:
    """An integer column as an int64 array (its first ``length`` values)."""
    taken = np.asarray(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    return taken if length is None else taken[:length]


def unix_us(clock: Epoch, seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Microseconds since the Unix epoch of simulated seconds (``Clock.epoch_ms``'s, vectorized:
    NumPy's ``rint`` rounds half to even, like Python's ``round``)."""
    with np.errstate(invalid="ignore"):
        us: np.ndarray[Any, Any] = clock.epoch_us + np.rint(seconds * 1_000_000).astype(np.int64)
    return us


def times(clock: Epoch, seconds: np.ndarray[Any, Any]) -> pd.Series:
    """UTC datetimes (``datetime64[us, UTC]``) of simulated seconds; NaN becomes NaT."""
    us = unix_us(clock, seconds)
    us = np.where(np.isnan(seconds), _NAT, us)
    moments = pd.Series(us.view("datetime64[us]"))
    return moments.dt.tz_localize("UTC")


def epoch_ms(clock: Epoch, seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Unix milliseconds of simulated seconds, as ``Clock.epoch_ms`` computes each one."""
    us = unix_us(clock, seconds)
    return np.trunc(us.astype(np.float64) / 1_000_000 * 1000).astype(np.int64)


def ulids(high: np.ndarray[Any, Any], low: np.ndarray[Any, Any], prefix: str = "") -> pd.Series:
    """The text of 128-bit ULIDs given as their high and low 64-bit halves (uint64 arrays), as a
    string column.

    The characters are written into one byte buffer that becomes the Arrow column as it is: a
    Python string per id, and the NumPy unicode arrays on the way (four bytes a character),
    would hold several times the column's own size at once and leave the heap fragmented.
    """
    count = len(high)
    head = prefix.encode()
    width = len(head) + 26
    chars = np.empty((count, width), dtype=np.uint8)
    chars[:, : len(head)] = np.frombuffer(head, dtype=np.uint8)
    high = high.astype(np.uint64)
    low = low.astype(np.uint64)
    for index in range(26):
        start = 125 - 5 * index  # lowest bit of this character's 5 bits
        if start >= 64:
            chunk = high >> np.uint64(start - 64)
        elif start + 5 <= 64:
            chunk = low >> np.uint64(start)
        else:
            chunk = (high << np.uint64(64 - start)) | (low >> np.uint64(start))
        chars[:, len(head) + index] = _CROCKFORD[(chunk & np.uint64(31)).astype(np.intp)]
    offsets = np.arange(0, (count + 1) * width, width, dtype=np.int64)
    text = pa.Array.from_buffers(
        pa.large_string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(chars)]
    )
    return arrow_strings(text)


def lookup(values: Sequence[str | None], picked: np.ndarray[Any, Any]) -> pd.Series:
    """``values[code]`` for every code, as a string column (``None`` is missing).

    The few distinct values become an Arrow array once and Arrow's ``take`` repeats them, so no
    per-row Python object is made.
    """
    table = pa.array(list(values), type=pa.large_string(), memory_pool=POOL)
    taken = pc.take(table, pa.array(np.asarray(picked, dtype=np.int64)), memory_pool=POOL)
    return arrow_strings(taken)


def arrow_strings(values: pa.Array | pa.ChunkedArray) -> pd.Series:
    """A string column (``str`` dtype) whose storage is ``values`` (large_string), not a copy."""
    return pd.Series(pd.array(values, dtype="str"))


def strings(values: Sequence[Any] | np.ndarray[Any, Any]) -> pd.Series:
    """A string column (``str`` dtype); ``None`` and NaN are missing."""
    return pd.Series(np.asarray(values, dtype=object), dtype="str")


def text_column(texts: Iterable[str | None], chunk: int = _TEXT_CHUNK) -> pd.Series:
    """A string column of many strings (``None``: missing), converted to Arrow ``chunk`` strings
    at a time.

    Only one chunk's strings are alive at a time, each chunk becomes one Arrow array sized to
    fit, and the column is those arrays, chained: a list of every string would double the
    column's memory while it is built.
    """
    chunks: list[pa.Array] = []
    source = iter(texts)
    while batch := list(islice(source, chunk)):
        chunks.append(pa.array(batch, type=pa.large_string(), memory_pool=POOL))
        del batch
    return arrow_strings(pa.chunked_array(chunks, type=pa.large_string()))


def to_frame(table: Table, clock: Epoch, *, empty: bool = False) -> pd.DataFrame:
    """The data frame of an exported table: one column per exported column, in its order
    (``empty``: none of its rows, with the same columns and dtypes)."""
    length = 0 if empty else table.length
    return pd.DataFrame(
        {name: to_series(exported, length, clock) for name, exported in table.columns.items()},
        copy=False,  # fresh arrays: neither copied nor consolidated
    )


def to_series(exported: Column, length: int, clock: Epoch) -> pd.Series:
    """One exported column of ``length`` rows as a pandas column, by its kind (no rows: its
    values are not read)."""
    kind = exported.kind
    if length == 0:
        exported = replace(exported, values=[], high=[], low=[], missing=exported.missing and [])
    elif callable(exported.values):
        exported = replace(exported, values=exported.values())
    values = exported.values
    assert not callable(values)
    if kind in ("text", "category"):
        return _labelled(exported, length)
    if kind == "id":
        return ulids(_uint64(values), _uint64(exported.low), exported.prefix)  # type: ignore[arg-type]
    if kind == "timed_id":
        at = floats(_dense(values, length, np.nan))
        high = (epoch_ms(clock, at).astype(np.uint64) << np.uint64(16)) | _uint64(exported.high)
        return ulids(high, _uint64(exported.low), exported.prefix)
    if kind == "time":
        return times(clock, floats(_dense(values, length, np.nan)))
    if kind == "float":
        return pd.Series(floats(_dense(values, length, np.nan)))
    if kind == "bool":
        return pd.Series(codes(_dense(values, length, 0)).astype(bool))
    numbers = codes(_dense(values, length, 0))
    missing = exported.missing
    if isinstance(values, Mapping):
        missing = set(range(length)) - set(values)
    if missing is None:
        return pd.Series(numbers)
    mask = np.zeros(length, dtype=bool)
    mask[np.fromiter(missing, dtype=np.int64, count=len(missing))] = True
    return pd.Series(pd.arrays.IntegerArray(numbers, mask))


def _uint64(values: Sequence[int]) -> np.ndarray[Any, Any]:
    return np.array(values, dtype=np.uint64) if len(values) else np.zeros(0, dtype=np.uint64)


def _dense(values: Sequence[Any] | Mapping[int, Any], length: int, none: Any) -> Any:
    """``values`` as a sequence of ``length``: a mapping's rows, ``none`` elsewhere."""
    if not isinstance(values, Mapping):
        return values
    dense = np.full(length, none, dtype=np.float64 if none is np.nan else np.int64)
    if values:
        rows = np.fromiter(values, dtype=np.int64, count=len(values))
        dense[rows] = np.fromiter(values.values(), dtype=dense.dtype, count=len(values))
    return dense


def _labelled(exported: Column, length: int) -> pd.Series:
    """A text or category column: its codes and their labels, or its strings."""
    values = exported.values
    assert not callable(values)
    labels: list[str | None] | None = None if exported.labels is None else list(exported.labels)
    if isinstance(values, Mapping):  # a few rows' strings: code 0 is none
        labels = [None, *dict.fromkeys(values.values())]
        code = {label: index for index, label in enumerate(labels)}
        picked = np.zeros(length, dtype=np.int64)
        if values:
            picked[np.fromiter(values, dtype=np.int64, count=len(values))] = np.fromiter(
                (code[v] for v in values.values()), dtype=np.int64, count=len(values)
            )
    elif labels is not None:
        picked = codes(values)
    elif exported.kind == "text":
        return text_column(values)
    else:  # the strings themselves: coded by Arrow's dictionary encoding (-1: none)
        encoded = pa.array(values, type=pa.large_string(), memory_pool=POOL).dictionary_encode()
        labels = encoded.dictionary.to_pylist()
        picked = encoded.indices.fill_null(len(labels)).to_numpy().astype(np.int64)
        labels.append(None)
    if exported.kind == "text":
        return lookup(labels, picked)
    # The categories are the values the rows have, sorted; a label may repeat or be none.
    used = np.flatnonzero(np.bincount(picked, minlength=len(labels))) if len(picked) else picked
    categories = sorted({labels[code] or "" for code in used.tolist() if labels[code] is not None})
    rank: dict[str | None, int] = {label: index for index, label in enumerate(categories)}
    mapped = np.array([rank.get(label, -1) for label in labels], dtype=np.int64)
    taken = mapped[picked] if len(picked) else picked
    return pd.Series(pd.Categorical.from_codes(taken, categories=pd.Index(categories, dtype="str")))


def relabel(categorical: pd.Series, labels: Sequence[str]) -> pd.Series:
    """A categorical column whose categories are renamed to ``labels`` (in the categories'
    order), sorted again."""
    categories = sorted(set(labels))
    rank = {label: index for index, label in enumerate(categories)}
    mapped = np.array([rank[label] for label in labels] + [-1], dtype=np.int64)
    picked = mapped[categorical.cat.codes.to_numpy()]  # -1 (none) takes the last: none again
    return pd.Series(
        pd.Categorical.from_codes(picked, categories=pd.Index(categories, dtype="str"))
    )
