"""Append-only columns for high-volume records (events, ledger rows, the API log).

Why columns: a long run writes millions of records, and a Python object per record (with a
``datetime``, a formatted id and a copy of the resource it is about) costs kilobytes where the raw
values cost tens of bytes. Records are appended as raw values (simulated seconds, interned codes,
the bits of an id) into typed arrays, and rendered only when someone reads them. A
collector can also take the arrays in bulk (``array`` supports the buffer protocol).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["Interner", "Ulids"]


V = TypeVar("V", bound=Hashable)


class Interner(Generic[V]):
    """A small vocabulary of repeated values (event types, org ids, attribution tuples) and their
    codes: a column stores the code, the vocabulary the value once."""

    __slots__ = ("_codes", "find", "values")

    def __init__(self, values: Iterable[V] = ()) -> None:
        self.values: list[V] = []
        self._codes: dict[V, int] = {}
        #: The code of ``value`` if it was ever interned (without adding it). The dictionary's
        #: own ``get`` (C code), not a method around it: the hot writers ask ``find`` first and
        #: call ``code`` only for a value not seen yet, saving a Python frame per record.
        self.find: Callable[[V], int | None] = self._codes.get
        for value in values:
            self.code(value)

    def code(self, value: V) -> int:
        code = self._codes.get(value)
        if code is None:
            code = self._codes[value] = len(self.values)
            self.values.append(value)
        return code

    def forget(self, code: int, codes: Iterable[int]) -> None:
        """Forget the newest value if it is ``code`` and no code of ``codes`` (the column that
        holds them) still uses it: the record that interned it was removed. Only a failed
        operation's undo calls this, so the scan costs nothing on the way in."""
        if code == len(self.values) - 1 and code not in codes:
            del self._codes[self.values.pop()]

    def __getitem__(self, code: int) -> V:
        return self.values[code]

    def __len__(self) -> int:
        return len(self.values)


class Ulids:
    """Whole 128-bit ULID values, 16 bytes each (two 64-bit halves)."""

    __slots__ = ("high", "low")

    def __init__(self) -> None:
        self.high = array("Q")
        self.low = array("Q")

    def append(self, value: int) -> None:
        self.high.append(value >> 64)
        self.low.append(value & 0xFFFF_FFFF_FFFF_FFFF)

    def __getitem__(self, index: int) -> int:
        return (self.high[index] << 64) | self.low[index]

    def pop(self) -> None:
        """Drop the newest value (a row retracted by a failed operation)."""
        self.high.pop()
        self.low.pop()

    def __len__(self) -> int:
        return len(self.low)
