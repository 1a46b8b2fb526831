"""Append-only columns for high-volume records (events, ledger rows, the API log), and the
typed tables the stores export them as.

Why columns: a long run writes millions of records, and a Python object per record (with a
``datetime``, a formatted id and a copy of the resource it is about) costs kilobytes where the raw
values cost tens of bytes. Records are appended as raw values (simulated seconds, interned codes,
the random bits of an id) into typed arrays, and rendered only when someone reads them.

Why an export type: each store hands its records out as a ``Table`` of named ``Column``s whose
kind says how to read them (a time, a category, an id...), so a collector turns any store's
records into a data frame with one converter per kind and never learns how a store keeps them.
The columns are plain Python values (``array`` and lists): the domain stays free of NumPy, Arrow
and pandas, and a converter takes the arrays in bulk through the buffer protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

__all__ = ["Column", "ColumnKind", "Interner", "Table"]

#: How a column's values read:
#:
#: - ``time``: simulated seconds (floats; NaN where there is none), an instant of the run's clock;
#: - ``float``: floats (NaN where there is none);
#: - ``int``: integers (``missing``: the rows that have none);
#: - ``bool``: truth values (ints or bools);
#: - ``text``: strings (``None`` where there is none);
#: - ``category``: a few distinct strings repeated over many rows: ``values`` are codes into
#:   ``labels`` (whose entries may repeat, or be ``None`` for none), or, without ``labels``, the
#:   strings themselves;
#: - ``id``: prefixed ULIDs given whole, as their high and low 64 bits (``values`` and ``low``);
#: - ``timed_id``: prefixed ULIDs made at the instants of ``values`` (simulated seconds, whose
#:   Unix millisecond is the id's time part) with 80 random bits given as their high 16 and low
#:   64 (``high`` and ``low``).
#:
#: ``values`` may also be a mapping of row to value when few rows have one (the rest have none),
#: or a function that gives them: a column that costs something to build is built when read.
ColumnKind = Literal["time", "float", "int", "bool", "text", "category", "id", "timed_id"]


@dataclass(frozen=True, slots=True)
class Column:
    """One exported column: its ``kind`` (``ColumnKind``) says how ``values`` read."""

    kind: ColumnKind
    values: Sequence[Any] | Mapping[int, Any] | Callable[[], Sequence[Any] | Mapping[int, Any]]
    labels: Sequence[str | None] | None = None
    prefix: str = ""
    high: Sequence[int] = ()
    low: Sequence[int] = ()
    missing: Collection[int] | None = None  # ``int`` only: ``None``: the column has no gaps


@dataclass(frozen=True, slots=True)
class Table:
    """A store's records as named columns of ``length`` rows each, in the order given."""

    length: int
    columns: dict[str, Column] = field(default_factory=dict)


V = TypeVar("V", bound=Hashable)


class _Codes(dict[V, int]):
    """An interner's codes by value: looking up a value it does not know yet gives it the next
    code (``__missing__``), so ``Interner.code`` is the dictionary's own lookup."""

    __slots__ = ("interned",)

    def __init__(self, interned: list[V]) -> None:
        super().__init__()
        self.interned = interned  # the interner's values, in code order

    def __missing__(self, value: V) -> int:
        code = self[value] = len(self.interned)
        self.interned.append(value)
        return code


class Interner(Generic[V]):
    """A small vocabulary of repeated values (event types, org ids, attribution tuples) and their
    codes: a column stores the code, the vocabulary the value once."""

    __slots__ = ("_codes", "code", "values")

    def __init__(self, values: Iterable[V] = ()) -> None:
        self.values: list[V] = []
        self._codes = _Codes(self.values)
        #: ``code(value)``: the code of ``value``, interned now if it is new.
        self.code: Callable[[V], int] = self._codes.__getitem__
        for value in values:
            self.code(value)

    def find(self, value: V) -> int | None:
        """The code of ``value`` if it was ever interned (without adding it)."""
        return self._codes.get(value)

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
