"""The ledger's rows as typed columns, in append order (SIM-5, PERF-2).

Why columns: a month writes over a million rows, and a ``LedgerEntry`` object per row would cost
about a kilobyte where its raw values cost about a hundred bytes. Each row is appended as raw
values (the id as its 128-bit ULID, the kind and the organization as codes, the attribution as
one interned tuple) and read back as a ``LedgerEntry`` (``entry``) or in bulk (``export``).
This is storage only: what a row may say is ``sim.billing.rules``'s, how rows are found is
``sim.billing.indexes``'.
"""

from __future__ import annotations

from array import array

from sim.billing.rules import ATTRIBUTION, ENTRY_KINDS, Attribution, EntryKind, LedgerEntry
from sim.columns import Column, Interner, Table
from sim.ids import PREFIXES, format_value

__all__ = ["KIND_CODES", "LedgerRows"]

#: Each kind's code in the ``kinds`` column.
KIND_CODES: dict[EntryKind, int] = {kind: code for code, kind in enumerate(ENTRY_KINDS)}


_LOW_64 = (1 << 64) - 1


class LedgerRows:
    """Append-only columns; only the newest row may be removed (``pop``)."""

    #: The columns, in append order of a row's values.
    COLUMNS: tuple[str, ...] = (
        "id_high",
        "id_low",
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

    def __init__(self) -> None:
        # Each row's id, a whole 128-bit ULID, as its high and low 64 bits.
        self.id_high = array("Q")
        self.id_low = array("Q")
        self.kinds = array("B")  # codes into ENTRY_KINDS
        self.orgs: Interner[str] = Interner()
        self.org_codes = array("I")  # codes into ``orgs``
        self.times = array("d")
        self.credits = array("Q")  # never negative: the kind gives the direction
        self.rollover_deltas = array("q")
        self.included_deltas = array("q")
        self.granted_deltas = array("q")
        self.session_ids: list[str | None] = []
        self.run_ids: list[str | None] = []
        self.internal = array("B")
        self.billable_seconds = array("Q")
        # A row's attribution (model, surface, quality...) recurs across many rows: one code.
        self.attributions: Interner[Attribution] = Interner()
        self.attribution_codes = array("I")

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
        self.id_high.append(ulid >> 64)
        self.id_low.append(ulid & _LOW_64)
        self.kinds.append(kind)
        self.org_codes.append(org_code)
        self.times.append(at)
        self.credits.append(credits)
        self.rollover_deltas.append(deltas[0])
        self.included_deltas.append(deltas[1])
        self.granted_deltas.append(deltas[2])
        self.session_ids.append(session_id)
        self.run_ids.append(run_id)
        self.internal.append(internal)
        self.billable_seconds.append(billable_seconds)
        self.attribution_codes.append(self.attributions.code(attribution))
        return len(self.times) - 1

    def pop(self) -> None:
        """Remove the newest row, and an organization or attribution only it used."""
        org_code, attribution_code = self.org_codes[-1], self.attribution_codes[-1]
        for name in self.COLUMNS:
            getattr(self, name).pop()
        self.orgs.forget(org_code, self.org_codes)
        self.attributions.forget(attribution_code, self.attribution_codes)

    def __len__(self) -> int:
        return len(self.times)

    def org_id(self, row: int) -> str:
        return self.orgs[self.org_codes[row]]

    def deltas(self, row: int) -> tuple[int, int, int]:
        return self.rollover_deltas[row], self.included_deltas[row], self.granted_deltas[row]

    def attribution(self, row: int) -> Attribution:
        """A row's attribution fields, in ``ATTRIBUTION`` order."""
        return self.attributions[self.attribution_codes[row]]

    def entry(self, row: int) -> LedgerEntry:
        if not 0 <= row < len(self.times):
            raise IndexError("no such ledger row")
        attribution = dict(zip(ATTRIBUTION, self.attribution(row), strict=True))
        return LedgerEntry(
            id=format_value("ledger_entry", self.id_high[row] << 64 | self.id_low[row]),
            seq=row,
            kind=ENTRY_KINDS[self.kinds[row]],
            org_id=self.org_id(row),
            at=self.times[row],
            credits=self.credits[row],
            rollover_delta=self.rollover_deltas[row],
            included_delta=self.included_deltas[row],
            granted_delta=self.granted_deltas[row],
            session_id=self.session_ids[row],
            run_id=self.run_ids[row],
            internal=bool(self.internal[row]),
            billable_seconds=self.billable_seconds[row],
            **attribution,
        )

    def export(self) -> Table:
        """Every row in append order: ``id``; ``kind`` and ``org_id`` (categories); ``at``
        (time); ``credits``, ``rollover_delta``, ``included_delta``, ``granted_delta``;
        ``session_id``, ``run_id``; ``internal`` (bool); ``billable_seconds``; and each field of
        ``ATTRIBUTION`` (categories). A debit's overage is not a column: it is its credits plus
        its deltas (``LedgerEntry.overage``)."""
        attributions = self.attributions.values
        columns = {
            "id": Column("id", self.id_high, prefix=PREFIXES["ledger_entry"], low=self.id_low),
            "kind": Column("category", self.kinds, labels=ENTRY_KINDS),
            "org_id": Column("category", self.org_codes, labels=self.orgs.values),
            "at": Column("time", self.times),
            "credits": Column("int", self.credits),
            "rollover_delta": Column("int", self.rollover_deltas),
            "included_delta": Column("int", self.included_deltas),
            "granted_delta": Column("int", self.granted_deltas),
            "session_id": Column("text", self.session_ids),
            "run_id": Column("text", self.run_ids),
            "internal": Column("bool", self.internal),
            "billable_seconds": Column("int", self.billable_seconds),
            **{
                name: Column(
                    "category", self.attribution_codes, labels=[a[index] for a in attributions]
                )
                for index, name in enumerate(ATTRIBUTION)
            },
        }
        return Table(len(self.times), columns)
