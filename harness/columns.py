"""Bulk conversions from the simulator's columns to pandas/NumPy values.

The domain keeps its records as raw values (simulated seconds, the bits of ids, interned codes);
these helpers turn whole columns into what the tables show in a few vectorized operations, with
exactly the arithmetic the domain uses for a single value (``sim.clock``, ``sim.ids``), so a
timestamp or an id read in bulk is the one read alone.
"""

from __future__ import annotations

import ctypes
from array import array
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from sim.clock import Clock

__all__ = [
    "POOL",
    "arrow_strings",
    "codes",
    "epoch_ms",
    "floats",
    "lookup",
    "return_free_memory",
    "strings",
    "text_column",
    "times",
    "ulids",
    "unix_us",
]

try:  # glibc's: hands the C heap's free pages back to the system
    _MALLOC_TRIM: Any = ctypes.CDLL(None).malloc_trim
except (OSError, AttributeError):  # another C library: it keeps them
    _MALLOC_TRIM = None

_CROCKFORD = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", dtype=np.uint8)
#: The allocator of the Arrow buffers the tables are built in. Not pyarrow's default (mimalloc):
#: it kept about 50 MB more resident for a month's tables (20,000 sessions at ``records: full``,
#: measured on collect's RSS) than the system allocator, which returns what it frees.
POOL = pa.system_memory_pool()
_NAT = np.iinfo(np.int64).min
#: Strings per Arrow chunk of a text column: a multiple of 1,024, the rows Parquet writes at a
#: time, so a chunked column is written as one array would be.
_TEXT_CHUNK = 4096


def floats(values: Sequence[float] | array[float] | np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A float64 array of a column (NaN stays NaN)."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=np.float64).copy() if len(values) else np.zeros(0)
    return np.asarray(values, dtype=np.float64)


def codes(values: array[int], length: int | None = None) -> np.ndarray[Any, Any]:
    """An integer column as an int64 array (its first ``length`` values)."""
    taken = np.asarray(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)
    return taken if length is None else taken[:length]


def unix_us(clock: Clock, seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Microseconds since the Unix epoch of simulated seconds (``Clock._unix_us``, vectorized:
    NumPy's ``rint`` rounds half to even, like Python's ``round``)."""
    with np.errstate(invalid="ignore"):
        us: np.ndarray[Any, Any] = clock.epoch_us + np.rint(seconds * 1_000_000).astype(np.int64)
    return us


def times(clock: Clock, seconds: np.ndarray[Any, Any]) -> pd.Series:
    """UTC datetimes (``datetime64[us, UTC]``) of simulated seconds; NaN becomes NaT."""
    us = unix_us(clock, seconds)
    us = np.where(np.isnan(seconds), _NAT, us)
    moments = pd.Series(us.view("datetime64[us]"))
    return moments.dt.tz_localize("UTC")


def epoch_ms(clock: Clock, seconds: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Unix milliseconds of simulated seconds, as ``Clock.epoch_ms`` computes each one."""
    us = unix_us(clock, seconds)
    return np.trunc(us.astype(np.float64) / 1_000_000 * 1000).astype(np.int64)


def ulids(high: np.ndarray[Any, Any], low: np.ndarray[Any, Any], prefix: str = "") -> pd.Series:
    """The text of 128-bit ULIDs given as their high and low 64-bit halves (uint64 arrays), as a
    string column.

    The characters are written into one byte buffer that becomes the Arrow column as it is: a
    Python string per id, and the NumPy unicode arrays on the way (four bytes a character), cost
    about 180 MB of transient memory per million ids and left the heap fragmented.
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
    per-row Python object is made: cheaper in time and in memory than an object array of
    references that pandas then walks row by row.
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

    Only one chunk's strings are alive at a time, each chunk becomes one Arrow array (Arrow's
    builder sizes its buffers to fit when it finishes), and the column is those arrays,
    chained. A list of every string (a month's event payloads take hundreds of megabytes) would
    double the column's memory while it is built; one growing buffer kept up to an eighth of it
    as slack for good.
    """
    chunks: list[pa.Array] = []
    source = iter(texts)
    while batch := list(islice(source, chunk)):
        chunks.append(pa.array(batch, type=pa.large_string(), memory_pool=POOL))
        del batch
    return arrow_strings(pa.chunked_array(chunks, type=pa.large_string()))


def return_free_memory() -> None:
    """Return the C heap's free pages to the system (``malloc_trim``, where the C library has
    it; nothing elsewhere).

    Why: building a large table frees as much as it keeps (conversions, chunk lists, the
    records a collector was handed), and the C allocator keeps those holes resident; the next
    tables fill only part of them. Trimmed after each table, a 100,000-session month at
    ``records: full`` ends collecting about 35 MB lower, which is its peak."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
