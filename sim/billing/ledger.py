"""The billing ledger: append-only, immutable entries, indexed by organization and time (SIM-5).

Why it is built this way: every billing figure the API shows (balance, quota, usage) is derived
from these entries and from nothing else. ``Ledger`` is the one way in: it holds each row to its
kind's rule (``sim.billing.rules``), appends it to the typed columns (``sim.billing.storage``)
and files it in the indexes (``sim.billing.indexes``: by organization and time with running
totals, by session, by run, and the usage rollups), so a charge reads no history and a window is
two bisections.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Any

from sim.billing.indexes import LedgerIndexes
from sim.billing.rollups import UsageRollup
from sim.billing.rules import (
    ATTRIBUTION,
    NO_ATTRIBUTION,
    Attribution,
    EntryKind,
    LedgerEntry,
    TariffLine,
    attribute,
    check_row,
    split_debit,
)
from sim.billing.storage import KIND_CODES, LedgerRows
from sim.columns import Table
from sim.ids import IdFactory

__all__ = ["Ledger"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_CHARGE = KIND_CODES["charge"]


class Ledger:
    """The append-only store; ``append`` (or ``record``) is the only way in, nothing is ever
    changed, and only a failed operation's own last row is ever removed (``retract``).
    ``charge_session`` is ``append`` for the rows of one finished session."""

    def __init__(self, ids: IdFactory) -> None:
        self._ids = ids
        self._start_empty()

    def _start_empty(self) -> None:
        """No row and no index (a new ledger, or one whose rows were released)."""
        self.rows = LedgerRows()
        self._indexes = LedgerIndexes(self.rows)

    def append(
        self,
        kind: EntryKind,
        org_id: str,
        at: float,
        credits: int,
        *,
        rollover_delta: int = 0,
        included_delta: int = 0,
        granted_delta: int = 0,
        session_id: str | None = None,
        run_id: str | None = None,
        internal: bool = False,
        billable_seconds: int = 0,
        attribution: Attribution = NO_ATTRIBUTION,
    ) -> int:
        """Append one row; returns its position. ``attribution`` is in ``ATTRIBUTION`` order
        (``attribute(...)`` builds it by name)."""
        deltas = (rollover_delta, included_delta, granted_delta)
        check_row(kind, credits, deltas, billable_seconds)
        for amount in (credits, *deltas, billable_seconds):
            if not _INT64_MIN <= amount <= _INT64_MAX:
                raise OverflowError("ledger amounts fit 64-bit columns")
        org = self._indexes.org(org_id)
        code = KIND_CODES[kind]
        row = self.rows.append(
            self._ids.value(),
            code,
            org.code,
            at,
            credits,
            deltas,
            session_id,
            run_id,
            internal,
            billable_seconds,
            attribution,
        )
        self._indexes.add(org, row, code, at, credits, deltas, session_id, run_id)
        return row

    def charge_session(
        self, org_id: str, at: float, session_id: str, seconds: int, tariff: Sequence[TariffLine]
    ) -> tuple[int, int]:
        """Append the ``charge`` rows of one finished session of ``seconds`` billable seconds,
        one per ``tariff`` line; returns the organization's balance before and after them.

        Each row takes what the pools can cover in the spending order (``split_debit``), never
        credits held for runs: rows that meet their kind's rule by construction, written
        without ``append``'s checks, and filed as the session's rows together."""
        org = self._indexes.org(org_id)
        before = org.rollover + org.included + org.granted
        rows, first = self.rows, len(self.rows)
        for per_second, internal, carries, attribution in tariff:
            credits = seconds * per_second
            rollover, included, granted = org.rollover, org.included, org.granted
            coverable = rollover + included + granted - org.held
            deltas = split_debit((rollover, included, granted), credits, coverable)
            row = rows.append(
                self._ids.value(),
                _CHARGE,
                org.code,
                at,
                credits,
                deltas,
                session_id,
                None,
                internal,
                seconds if carries else 0,
                attribution,
            )
            org.add(row, _CHARGE, at, credits, deltas)
        self._indexes.file_charge(org, session_id, first, len(tariff), at)
        return before, org.rollover + org.included + org.granted

    def record(
        self, kind: EntryKind, org_id: str, at: float, credits: int, **fields: Any
    ) -> LedgerEntry:
        """Append one entry and return it (fields of ``LedgerEntry`` by keyword)."""
        named = {name: fields.pop(name) for name in ATTRIBUTION if name in fields}
        return self.entry(
            self.append(kind, org_id, at, credits, attribution=attribute(**named), **fields)
        )

    def retract(self, row: int) -> None:
        """Remove the newest row, written by an operation that then failed as a whole
        (``sim.journal``): every column, index and running total is as before its ``append``.

        The one exception to append-only, and only for the last row: no reader can have derived
        anything from it yet, because the operation that wrote it never completed.
        """
        if row != len(self.rows) - 1:
            raise ValueError("only the newest ledger row can be retracted")
        self._indexes.remove(row)
        self.rows.pop()

    # -- reading ---------------------------------------------------------------------------

    def entry(self, row: int) -> LedgerEntry:
        return self.rows.entry(row)

    def attribution(self, row: int) -> Attribution:
        """A row's attribution fields, in ``ATTRIBUTION`` order, without building the entry."""
        return self.rows.attribution(row)

    def totals(self, org_id: str) -> tuple[int, int, int, int]:
        """The organization's running ``(rollover, included, granted, held)``."""
        org = self._indexes.orgs.get(org_id)
        if org is None:
            return 0, 0, 0, 0
        return org.rollover, org.included, org.granted, org.held

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return (self.entry(row) for row in range(len(self.rows)))

    def all(self) -> Sequence[LedgerEntry]:
        """Every entry in append order."""
        return tuple(self)

    def org_ids(self) -> list[str]:
        return list(self._indexes.orgs)

    def count(self, org_id: str) -> int:
        org = self._indexes.orgs.get(org_id)
        return 0 if org is None else len(org.by_time)

    def appended(self, org_id: str, start: int = 0) -> Sequence[LedgerEntry]:
        """The organization's entries in append order, from position ``start``."""
        org = self._indexes.orgs.get(org_id)
        if org is None:
            return ()
        return tuple(self.entry(row) for row in sorted(org.by_time)[start:])

    def has_session(self, session_id: str) -> bool:
        return session_id in self._indexes.sessions

    def session_rows(self, session_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a session, in append order."""
        return tuple(self.entry(row) for row in self._indexes.session_rows(session_id))

    def run_rows(self, run_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a run, in append order (kept after the run is deleted)."""
        return tuple(self.entry(row) for row in self._indexes.runs.get(run_id, ()))

    def run_row(self, run_id: str, *kinds: EntryKind) -> int | None:
        """The position of the run's first entry of one of ``kinds`` (``None``: it has none):
        a run's bookkeeping asks which of its rows exist, which needs no entry built."""
        wanted = {KIND_CODES[kind] for kind in kinds}
        codes = self.rows.kinds
        return next((r for r in self._indexes.runs.get(run_id, ()) if codes[r] in wanted), None)

    def window_rows(self, org_id: str, start: float, end: float) -> Sequence[int]:
        """Positions of the organization's rows dated in ``[start, end)``, by time (then append
        order)."""
        org = self._indexes.orgs.get(org_id)
        if org is None:
            return ()
        times = org.times
        first = bisect_left(times, start)
        return org.by_time[first : bisect_left(times, end, first)]

    def window(self, org_id: str, start: float, end: float) -> Sequence[LedgerEntry]:
        """The organization's entries dated in ``[start, end)``, by time (then append order)."""
        return tuple(self.entry(row) for row in self.window_rows(org_id, start, end))

    def usage(self, org_id: str) -> UsageRollup:
        """The organization's usage rollup (``sim.billing.rollups``), folded up to its newest
        row."""
        org = self._indexes.orgs.get(org_id)
        if org is None:
            return UsageRollup()
        code, indexes = org.code, self._indexes
        return org.usage.fold(
            org.by_time, self.rows, indexes.sessions, lambda s: indexes.first_charge(s, code)
        )

    def charge_times(self, session_id: str, org_id: str) -> list[float]:
        """The times of a session's ``charge`` rows in the organization ``org_id``."""
        org = self._indexes.orgs.get(org_id)
        return [] if org is None else self._indexes.charge_times(session_id, org.code)

    def export(self) -> Table:
        """Every row in append order (``LedgerRows.export``)."""
        return self.rows.export()

    def release(self) -> None:
        """Forget every row and running total: who read the ledger in bulk (a run's collector,
        which hands the run over) returns its memory. The ledger is then empty, as a new one."""
        self._start_empty()
