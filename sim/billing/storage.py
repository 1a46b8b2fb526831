"""The ledger's rows as typed columns, in append order (SIM-5, PERF-2).

Why columns: a month writes over a million rows, and a ``LedgerEntry`` object per row would cost
about a kilobyte where its raw values cost about a hundred bytes. Each row is appended as raw
values (the id as its 128-bit ULID, the kind and the organization as codes, the attribution as
one interned tuple) and read back as a ``LedgerEntry`` (``entry``) or in bulk (``export``).
This is storage only: what a row may say is ``sim.billing.rules``'s, how rows are found is
``sim.billing.indexes``'.

A new row waits as one tuple until the waiting rows are moved into the columns together, one
conversion per column (``flush``): every ``_WAITING_ROWS`` rows, and before anything reads a
column (the column attributes below move them first). Appending each value to its typed array
at once cost a conversion per value, thirteen a row, about four times the rest of a write.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from struct import pack
from typing import Any, Generic, TypeVar, cast, overload

from sim.billing.rules import ATTRIBUTION, ENTRY_KINDS, Attribution, EntryKind, LedgerEntry
from sim.columns import Column, Interner, Table, Ulids
from sim.ids import PREFIXES, format_value

__all__ = ["KIND_CODES", "LedgerRows"]

#: Each kind's code in the ``kinds`` column.
KIND_CODES: dict[EntryKind, int] = {kind: code for code, kind in enumerate(ENTRY_KINDS)}

C = TypeVar("C")


class _Column(Generic[C]):
    """A column as its readers see it: the waiting rows are moved in first (``flush``), so a
    reader never sees part of the ledger."""

    __slots__ = ("_name",)

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = "_" + name

    @overload
    def __get__(self, rows: None, owner: type[Any]) -> _Column[C]: ...

    @overload
    def __get__(self, rows: LedgerRows, owner: type[Any]) -> C: ...

    def __get__(self, rows: LedgerRows | None, owner: type[Any]) -> C | _Column[C]:
        if rows is None:
            return self
        rows.flush()
        return cast(C, getattr(rows, self._name))


#: How many rows wait before they are moved into the columns (a read moves them at once).
_WAITING_ROWS = 512
_LOW_64 = 0xFFFF_FFFF_FFFF_FFFF


def _extend(column: array[Any], values: Sequence[Any]) -> None:
    """Append ``values`` to ``column`` in one conversion (the array's type is struct's code)."""
    column.frombytes(pack(f"{len(values)}{column.typecode}", *values))


class LedgerRows:
    """Append-only columns; only the newest row may be removed (``pop``)."""

    #: The columns, in the order of a waiting row (the ULID whole, split when moved in).
    COLUMNS: tuple[str, ...] = (
        "ulids",
        "kinds",
        "org_codes",
        "times",
        "credits",
        "rollover_deltas",
        "included_deltas",
        "granted_deltas",
        "session_ids",
        "run_ids",
        "internal",
        "billable_seconds",
        "attribution_codes",
    )
    ulids: _Column[Ulids] = _Column()
    kinds: _Column[array[int]] = _Column()  # codes into ENTRY_KINDS
    org_codes: _Column[array[int]] = _Column()  # codes into ``orgs``
    times: _Column[array[float]] = _Column()
    credits: _Column[array[int]] = _Column()
    rollover_deltas: _Column[array[int]] = _Column()
    included_deltas: _Column[array[int]] = _Column()
    granted_deltas: _Column[array[int]] = _Column()
    session_ids: _Column[list[str | None]] = _Column()
    run_ids: _Column[list[str | None]] = _Column()
    internal: _Column[array[int]] = _Column()
    billable_seconds: _Column[array[int]] = _Column()
    # A row's attribution (model, surface, quality...) recurs across many rows: one code.
    attribution_codes: _Column[array[int]] = _Column()

    def __init__(self) -> None:
        self._ulids = Ulids()
        self._kinds = array("B")
        self.orgs: Interner[str] = Interner()
        self._org_codes = array("I")
        self._times = array("d")
        self._credits = array("q")
        self._rollover_deltas = array("q")
        self._included_deltas = array("q")
        self._granted_deltas = array("q")
        self._session_ids: list[str | None] = []
        self._run_ids: list[str | None] = []
        self._internal = array("B")
        self._billable_seconds = array("q")
        self.attributions: Interner[Attribution] = Interner()
        self._attribution_codes = array("I")
        self._waiting: list[tuple[Any, ...]] = []
        self._count = 0  # in the columns and waiting

    def append(
        self,
        ulid: int,
        kind: int,
        org_code: int,
        at: float,
        credits: int,
        deltas: tuple[int, int, int],
        session_id: str | None,
        run_id: str | None,
        internal: bool,
        billable_seconds: int,
        attribution: Attribution,
    ) -> int:
        """Append one row (its kind's and organization's codes, ``deltas`` as (rollover,
        included, granted)); returns its position."""
        waiting = self._waiting
        waiting.append(
            (
                ulid,
                kind,
                org_code,
                at,
                credits,
                *deltas,
                session_id,
                run_id,
                internal,
                billable_seconds,
                self.attributions.code(attribution),
            )
        )
        if len(waiting) >= _WAITING_ROWS:
            self.flush()
        self._count += 1
        return self._count - 1

    def flush(self) -> None:
        """Move the waiting rows into the columns, one conversion per column."""
        waiting = self._waiting
        if not waiting:
            return
        values = list(zip(*waiting, strict=True))
        _extend(self._ulids.high, [ulid >> 64 for ulid in values[0]])
        _extend(self._ulids.low, [ulid & _LOW_64 for ulid in values[0]])
        for name, column in zip(self.COLUMNS[1:], values[1:], strict=True):
            target = getattr(self, "_" + name)
            if isinstance(target, list):
                target.extend(column)
            else:
                _extend(target, column)
        waiting.clear()

    def pop(self) -> None:
        """Remove the newest row, and an organization or attribution only it used."""
        self.flush()
        org_code, attribution_code = self._org_codes[-1], self._attribution_codes[-1]
        self._ulids.pop()
        for name in self.COLUMNS[1:]:
            getattr(self, "_" + name).pop()
        self._count -= 1
        self.orgs.forget(org_code, self._org_codes)
        self.attributions.forget(attribution_code, self._attribution_codes)

    def __len__(self) -> int:
        return self._count

    def kind_org_time(self, row: int) -> tuple[int, int, float]:
        """A row's kind code, organization code and time, read without moving the waiting rows
        in (a write asks this of a session's earlier rows)."""
        waiting = self._count - len(self._waiting)
        if row >= waiting:
            values = self._waiting[row - waiting]
            return values[1], values[2], values[3]
        return self._kinds[row], self._org_codes[row], self._times[row]

    def org_id(self, row: int) -> str:
        return self.orgs[self.org_codes[row]]

    def deltas(self, row: int) -> tuple[int, int, int]:
        self.flush()
        return self._rollover_deltas[row], self._included_deltas[row], self._granted_deltas[row]

    def attribution(self, row: int) -> Attribution:
        """A row's attribution fields, in ``ATTRIBUTION`` order."""
        return self.attributions[self.attribution_codes[row]]

    def entry(self, row: int) -> LedgerEntry:
        if not 0 <= row < self._count:
            raise IndexError("no such ledger row")
        self.flush()
        attribution = dict(zip(ATTRIBUTION, self.attribution(row), strict=True))
        return LedgerEntry(
            id=format_value("ledger_entry", self._ulids[row]),
            seq=row,
            kind=ENTRY_KINDS[self._kinds[row]],
            org_id=self.org_id(row),
            at=self._times[row],
            credits=self._credits[row],
            rollover_delta=self._rollover_deltas[row],
            included_delta=self._included_deltas[row],
            granted_delta=self._granted_deltas[row],
            session_id=self._session_ids[row],
            run_id=self._run_ids[row],
            internal=bool(self._internal[row]),
            billable_seconds=self._billable_seconds[row],
            **attribution,
        )

    def export(self) -> Table:
        """Every row in append order: ``id``; ``kind`` and ``org_id`` (categories); ``at``
        (time); ``credits``, ``rollover_delta``, ``included_delta``, ``granted_delta``;
        ``session_id``, ``run_id``; ``internal`` (bool); ``billable_seconds``; and each field of
        ``ATTRIBUTION`` (categories). A debit's overage is not a column: it is its credits plus
        its deltas (``LedgerEntry.overage``)."""
        self.flush()
        attributions = self.attributions.values
        columns = {
            "id": Column(
                "id", self._ulids.high, prefix=PREFIXES["ledger_entry"], low=self._ulids.low
            ),
            "kind": Column("category", self._kinds, labels=ENTRY_KINDS),
            "org_id": Column("category", self._org_codes, labels=self.orgs.values),
            "at": Column("time", self._times),
            "credits": Column("int", self._credits),
            "rollover_delta": Column("int", self._rollover_deltas),
            "included_delta": Column("int", self._included_deltas),
            "granted_delta": Column("int", self._granted_deltas),
            "session_id": Column("text", self._session_ids),
            "run_id": Column("text", self._run_ids),
            "internal": Column("bool", self._internal),
            "billable_seconds": Column("int", self._billable_seconds),
            **{
                name: Column(
                    "category", self._attribution_codes, labels=[a[index] for a in attributions]
                )
                for index, name in enumerate(ATTRIBUTION)
            },
        }
        return Table(self._count, columns)
