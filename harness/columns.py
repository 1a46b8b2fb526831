"""Bulk conversions from the simulator's columns to pandas/NumPy values.

The domain keeps its records as raw values (simulated seconds, the bits of ids, interned codes);
these helpers turn whole columns into what the tables show in a few vectorized operations, with
exactly the arithmetic the domain uses for a single value (``sim.clock``, ``sim.ids``), so a
timestamp or an id read in bulk is the one read alone.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from sim.clock import Clock

__all__ = [
    "codes",
    "epoch_ms",
    "floats",
    "strings",
    "text_chunks",
    "times",
    "ulids",
    "unix_us",
]

_UNIX = datetime(1970, 1, 1, tzinfo=UTC)
_CROCKFORD = np.frombuffer(b"0123456789ABCDEFGHJKMNPQRSTVWXYZ", dtype=np.uint8)
_NAT = np.iinfo(np.int64).min


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
    epoch_us = (clock.epoch - _UNIX) // timedelta(microseconds=1)
    with np.errstate(invalid="ignore"):
        us: np.ndarray[Any, Any] = epoch_us + np.rint(seconds * 1_000_000).astype(np.int64)
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


def ulids(
    high: np.ndarray[Any, Any], low: np.ndarray[Any, Any], prefix: str = ""
) -> np.ndarray[Any, Any]:
    """The text of 128-bit ULIDs given as their high and low 64-bit halves (uint64 arrays)."""
    count = len(high)
    if count == 0:
        return np.zeros(0, dtype=object)
    high = high.astype(np.uint64)
    low = low.astype(np.uint64)
    chars = np.empty((count, 26), dtype=np.uint8)
    for index in range(26):
        start = 125 - 5 * index  # lowest bit of this character's 5 bits
        if start >= 64:
            chunk = high >> np.uint64(start - 64)
        elif start + 5 <= 64:
            chunk = low >> np.uint64(start)
        else:
            chunk = (high << np.uint64(64 - start)) | (low >> np.uint64(start))
        chars[:, index] = _CROCKFORD[(chunk & np.uint64(31)).astype(np.intp)]
    text = chars.view("S26").ravel().astype(str)
    if prefix:
        text = np.char.add(prefix, text)
    return text.astype(object)


def strings(values: Sequence[Any] | np.ndarray[Any, Any]) -> pd.Series:
    """A string column (``str`` dtype); ``None`` and NaN are missing."""
    return pd.Series(np.asarray(values, dtype=object), dtype="str")


def text_chunks(chunks: Iterable[list[str]]) -> pd.Series:
    """A string column made of lists of strings, each turned into Arrow storage as soon as it
    is made, so only one chunk of Python strings is alive at a time."""
    arrays = [pa.array(chunk, type=pa.large_string()) for chunk in chunks]
    if not arrays:
        return strings([])
    return pd.Series(pd.array(pa.chunked_array(arrays), dtype="str"))
