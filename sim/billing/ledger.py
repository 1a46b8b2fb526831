"""The billing ledger: append-only, immutable entries, indexed by organization and time (SIM-5).

Why it is built this way: every billing figure the API shows (balance, quota, usage) is derived
from these entries and from nothing else. An entry states its own effect on the three credit
pools (``rollover``, ``included``, ``granted``; GAP-BILL-2) as signed deltas fixed when it is
written, so anyone can recompute a balance from the raw rows without replaying the spending
order. The ledger also keeps each organization's running totals of those deltas (and of its run
holds), updated as rows are appended: the same numbers a fold over its rows gives (the tests
check that), without reading its history on every charge.

``KIND_RULES`` is the declared meaning of each kind; every row that breaks it is refused, and the
tests read the same table. Amounts (``credits``) are non-negative integers; direction comes from
the kind.

Storage: rows are kept as raw values in typed columns (the id as its 128-bit ULID, interned
attribution strings) and read back as ``LedgerEntry`` records; a new row waits as a tuple until
the pending rows are moved into the columns together (``Ledger.flush``, before any read). Each
organization has its own row list in time order, so a window is two bisections, never a scan of
other organizations' history.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from struct import pack
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar, cast, overload

from sim.columns import Column, Interner, Table, Ulids
from sim.ids import PREFIXES, IdFactory, format_value

__all__ = [
    "ATTRIBUTION",
    "ENTRY_KINDS",
    "KIND_RULES",
    "NO_ATTRIBUTION",
    "Attribution",
    "EntryKind",
    "KindRule",
    "Ledger",
    "LedgerEntry",
    "Pool",
    "TariffLine",
    "attribute",
    "check_row",
]

EntryKind = Literal[
    "grant", "charge", "reservation", "settlement", "release", "refund", "rollover", "expiry"
]
ENTRY_KINDS: tuple[EntryKind, ...] = (
    "grant",
    "charge",
    "reservation",
    "settlement",
    "release",
    "refund",
    "rollover",
    "expiry",
)

Pool = Literal["rollover", "included", "granted"]

Effect = Literal["credit", "debit", "transfer", "hold", "unhold"]


@dataclass(frozen=True, slots=True)
class KindRule:
    """What an entry kind does to the pools, and whether it is customer usage.

    ``credit`` adds ``credits`` to pools; ``debit`` takes at most ``credits`` from pools (a debit
    the pools cannot cover records the rest as ``overage``); ``transfer`` moves credits between
    pools (net zero); ``hold`` / ``unhold`` open and close a run's reservation without touching
    the pools.
    """

    effect: Effect
    usage: bool  # counted in usage summaries (credits_charged and every by_* slice)


KIND_RULES: Mapping[EntryKind, KindRule] = MappingProxyType(
    {
        "grant": KindRule("credit", usage=False),
        "refund": KindRule("credit", usage=False),
        "rollover": KindRule("transfer", usage=False),
        "expiry": KindRule("debit", usage=False),
        "charge": KindRule("debit", usage=True),
        "settlement": KindRule("debit", usage=True),
        "reservation": KindRule("hold", usage=False),
        "release": KindRule("unhold", usage=False),
    }
)


#: Each kind's effect, read without going through its rule (``check_row`` runs for every row).
_EFFECTS: Mapping[str, Effect] = {kind: rule.effect for kind, rule in KIND_RULES.items()}


def check_row(
    kind: EntryKind, credits: int, deltas: tuple[int, int, int], billable_seconds: int = 0
) -> None:
    """Refuse a row that breaks the rule of its kind (``KIND_RULES``)."""
    # ``type(...) is int`` first: every row pays this check, and isinstance twice cost more.
    if type(credits) is not int and (isinstance(credits, bool) or not isinstance(credits, int)):
        raise TypeError("ledger credits are integers")
    if credits < 0 or billable_seconds < 0:
        raise ValueError("ledger amounts are non-negative; the kind gives the direction")
    effect = _EFFECTS[kind]
    if effect == "debit":
        ok = max(deltas) <= 0 and -sum(deltas) <= credits
    elif effect == "credit":
        ok = min(deltas) >= 0 and sum(deltas) == credits
    elif effect == "transfer":
        ok = sum(deltas) == 0
    else:  # hold / unhold: the pools are untouched
        ok = deltas == (0, 0, 0)
    if not ok:
        raise ValueError(f"pool deltas {deltas} do not fit a {kind} of {credits}")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One immutable ledger row: what happened, to whom, when, how much, and on whose account."""

    id: str
    seq: int  # position in the whole ledger (append order)
    kind: EntryKind
    org_id: str
    at: float  # simulated seconds; the moment the entry is dated (a charge: when it settled)
    credits: int  # amount, >= 0
    rollover_delta: int = 0
    included_delta: int = 0
    granted_delta: int = 0
    # attribution
    session_id: str | None = None
    run_id: str | None = None
    model: str | None = None
    internal: bool = False
    billing_surface: str | None = None
    quality: str | None = None
    speech_billing_mode: str | None = None
    embed_id: str | None = None
    avatar_id: str | None = None
    operation: str | None = None
    pricing_version: str | None = None
    billable_seconds: int = 0  # carried by the primary session charge only, never twice
    note: str | None = None

    def __post_init__(self) -> None:
        check_row(
            self.kind,
            self.credits,
            (self.rollover_delta, self.included_delta, self.granted_delta),
            self.billable_seconds,
        )

    @property
    def pool_change(self) -> int:
        """Net change of the organization's balance (sum of the pool deltas)."""
        return self.rollover_delta + self.included_delta + self.granted_delta

    @property
    def overage(self) -> int:
        """The part of a debit no pool could cover (0 for every other kind)."""
        if KIND_RULES[self.kind].effect != "debit":
            return 0
        return self.credits + self.pool_change

    @property
    def is_usage(self) -> bool:
        return KIND_RULES[self.kind].usage

    def as_record(self) -> dict[str, Any]:
        """A flat, JSON-ready dict of every field (for collectors and DataFrames)."""
        record = asdict(self)
        record["overage"] = self.overage
        return record


#: Attribution fields kept together as one interned tuple per row, in this order.
ATTRIBUTION: tuple[str, ...] = (
    "model",
    "billing_surface",
    "quality",
    "speech_billing_mode",
    "embed_id",
    "avatar_id",
    "operation",
    "pricing_version",
    "note",
)
_KIND_CODE = {kind: code for code, kind in enumerate(ENTRY_KINDS)}
_HOLD, _UNHOLD = _KIND_CODE["reservation"], (_KIND_CODE["settlement"], _KIND_CODE["release"])
_CHARGE = _KIND_CODE["charge"]

Attribution = tuple[str | None, ...]
NO_ATTRIBUTION: Attribution = (None,) * len(ATTRIBUTION)


def attribute(
    *,
    model: str | None = None,
    billing_surface: str | None = None,
    quality: str | None = None,
    speech_billing_mode: str | None = None,
    embed_id: str | None = None,
    avatar_id: str | None = None,
    operation: str | None = None,
    pricing_version: str | None = None,
    note: str | None = None,
) -> Attribution:
    """A row's attribution by name, in ``ATTRIBUTION`` order."""
    return (
        model,
        billing_surface,
        quality,
        speech_billing_mode,
        embed_id,
        avatar_id,
        operation,
        pricing_version,
        note,
    )


class _Org:
    """One organization's rows in time order, its code in the ledger's ``orgs`` and its running
    totals. (Its rows in append order are the same rows sorted: nothing reads them often enough
    to keep them twice.)"""

    __slots__ = ("by_time", "code", "granted", "held", "included", "rollover", "times")

    def __init__(self, code: int) -> None:
        self.code = code
        self.times = array("d")  # sorted
        self.by_time = array("I")  # rows in time order; ties keep append order
        self.rollover = self.included = self.granted = self.held = 0

    def file(self, row: int, at: float) -> None:
        """File a new ``row`` dated ``at`` in time order (after every row of its time)."""
        times = self.times
        if not times or at >= times[-1]:  # the common case: dated at or after the newest
            times.append(at)
            self.by_time.append(row)
        else:
            position = bisect_right(times, at)
            times.insert(position, at)
            self.by_time.insert(position, row)

    def remove_last(self, row: int, at: float) -> None:
        """Undo the filing of the newest row (it sits after every row of its time)."""
        position = bisect_right(self.times, at) - 1
        while self.by_time[position] != row:  # rows of the same time, newest last
            position -= 1
        del self.times[position]
        del self.by_time[position]


C = TypeVar("C")


class _Column(Generic[C]):
    """A column of the ledger as its readers see it: the rows still pending are moved in first
    (``Ledger.flush``), so a reader never sees part of the ledger."""

    __slots__ = ("_name",)

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = "_" + name

    @overload
    def __get__(self, ledger: None, owner: type[Any]) -> _Column[C]: ...

    @overload
    def __get__(self, ledger: Ledger, owner: type[Any]) -> C: ...

    def __get__(self, ledger: Ledger | None, owner: type[Any]) -> C | _Column[C]:
        if ledger is None:
            return self
        ledger.flush()
        return cast(C, getattr(ledger, self._name))


#: A row written but not yet in the columns: its values in the order of ``Ledger.COLUMNS``
#: (the ULID whole, split in two halves when moved in).
_Row = tuple[int, int, int, float, int, int, int, int, str | None, str | None, bool, int, int]
#: How many rows wait before they are moved into the columns (a read moves them at once).
_PENDING_ROWS = 512


#: One row of a session's tariff: (credits per billable second, internal, whether the row carries
#: the session's billable seconds, attribution). ``Ledger.charge_session`` writes one row each.
TariffLine = tuple[int, bool, bool, Attribution]

_LOW_64 = 0xFFFF_FFFF_FFFF_FFFF
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _extend(column: array[Any], values: Sequence[Any]) -> None:
    """Append ``values`` to ``column`` in one conversion (the array's type is struct's code)."""
    column.frombytes(pack(f"{len(values)}{column.typecode}", *values))


class Ledger:
    """The append-only store; ``append`` (or ``record``) is the only way in, nothing is ever
    changed, and only a failed operation's own last row is ever removed (``retract``).
    ``charge_session`` is ``append`` for the rows of one finished session, in one call.

    A row is written as one tuple to a short list of pending rows, and the pending rows are
    moved into the typed columns together (``flush``): every ``_PENDING_ROWS`` rows, and before
    anything reads a column. Why: appending to a typed array converts the value through a
    generic argument parser, about 800 instructions a value, 14 values a row; a tuple costs a
    fraction of that, and a whole column of pending values is converted by ``struct`` at once.
    Running totals and the indexes by organization, session and run are kept at once, as
    charges and reads of a balance need them.
    """

    #: The columns, in the order of a pending row (``_Row``). Readers take them by name (the
    #: ``_Column`` attributes below), never the private arrays they return.
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
    kinds: _Column[array[int]] = _Column()
    org_codes: _Column[array[int]] = _Column()
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

    def __init__(self, ids: IdFactory) -> None:
        self._ids = ids
        self._start_empty()

    def _start_empty(self) -> None:
        """Every column and index, empty (a new ledger, or one whose rows were released)."""
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
        self._pending: list[_Row] = []
        self._rows = 0  # in the columns and pending
        self._by_org: dict[str, _Org] = {}
        # A session's rows are written together when it is charged: first row * 8 + count.
        self._by_session: dict[str, int] = {}
        self._late_session_rows: dict[str, list[int]] = {}  # e.g. a refund days later
        self._by_run: dict[str, list[int]] = {}

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
        check_row(kind, credits, (rollover_delta, included_delta, granted_delta), billable_seconds)
        for amount in (credits, rollover_delta, included_delta, granted_delta, billable_seconds):
            if not _INT64_MIN <= amount <= _INT64_MAX:
                raise OverflowError("ledger amounts fit 64-bit columns")
        return self._write(
            _KIND_CODE[kind],
            self._org(org_id),
            at,
            credits,
            rollover_delta,
            included_delta,
            granted_delta,
            session_id,
            run_id,
            internal,
            billable_seconds,
            attribution,
        )

    def charge_session(
        self, org_id: str, at: float, session_id: str, seconds: int, tariff: Sequence[TariffLine]
    ) -> tuple[int, int]:
        """Append the ``charge`` rows of one finished session of ``seconds`` billable seconds,
        one per ``tariff`` line; returns the organization's balance before and after them.

        Each row takes what the pools can cover, rollover first, then included, then granted,
        and never credits held for runs: the deltas ``split_debit`` gives for the running totals
        (``sim.billing.balances``), computed here in place, and without ``check_row``, which such
        rows meet by construction. A test holds this to ``append`` of those deltas, row for row,
        column for column.

        Every session that ran is charged, so this is ``_write`` for all its rows in one call,
        keeping only what a charge needs: no kind, hold or run to look at, the columns and the
        totals read once, and the session's rows filed as one run (its common case) at the end.
        """
        org = self._by_org.get(org_id) or self._org(org_id)  # ``_org``, its common case first
        rollover, included, granted = org.rollover, org.included, org.granted
        before = rollover + included + granted
        held = org.held
        first = row = self._rows
        value, pending, org_code = self._ids.value, self._pending, org.code
        attributions = self.attributions
        for per_second, internal, carries, attribution in tariff:
            credits = seconds * per_second
            # ``split_debit`` with conditionals for ``min``/``max`` (each builtin call parses
            # its arguments like a keyword call: most of what this loop cost).
            coverable = rollover + included + granted - held
            remaining = coverable if coverable < credits else credits
            remaining = remaining if remaining > 0 else 0
            pool = rollover if rollover > 0 else 0
            from_rollover = pool if pool < remaining else remaining
            remaining -= from_rollover
            pool = included if included > 0 else 0
            from_included = pool if pool < remaining else remaining
            remaining -= from_included
            pool = granted if granted > 0 else 0
            from_granted = pool if pool < remaining else remaining
            rollover -= from_rollover
            included -= from_included
            granted -= from_granted
            code = attributions.find(attribution)  # ``code`` after its cheap ``find``
            pending.append(
                (
                    value(),
                    _CHARGE,
                    org_code,
                    at,
                    credits,
                    -from_rollover,
                    -from_included,
                    -from_granted,
                    session_id,
                    None,
                    internal,
                    seconds if carries else 0,
                    attributions.code(attribution) if code is None else code,
                )
            )
            org.file(row, at)
            row += 1
        self._rows = row
        org.rollover, org.included, org.granted = rollover, included, granted
        count = row - first
        if session_id not in self._by_session and 0 < count < 8:
            self._by_session[session_id] = first * 8 + count
        else:  # a session charged again, or of eight lines or more: row by row
            for charged in range(first, row):
                self._file_session_row(session_id, charged)
        if len(pending) >= _PENDING_ROWS:
            self.flush()
        return before, rollover + included + granted

    def _org(self, org_id: str) -> _Org:
        org = self._by_org.get(org_id)
        if org is None:
            org = self._by_org[org_id] = _Org(self.orgs.code(org_id))
        return org

    def _write(
        self,
        code: int,
        org: _Org,
        at: float,
        credits: int,
        rollover_delta: int,
        included_delta: int,
        granted_delta: int,
        session_id: str | None,
        run_id: str | None,
        internal: bool,
        billable_seconds: int,
        attribution: Attribution,
    ) -> int:
        """Write one checked row: pending for the columns, at once in the indexes and the
        running totals."""
        row = self._rows
        self._rows = row + 1
        attributions = self.attributions  # ``code`` after its cheap ``find``: one per row
        code_of = attributions.find(attribution)
        self._pending.append(
            (
                self._ids.value(),
                code,
                org.code,
                at,
                credits,
                rollover_delta,
                included_delta,
                granted_delta,
                session_id,
                run_id,
                internal,
                billable_seconds,
                attributions.code(attribution) if code_of is None else code_of,
            )
        )
        org.file(row, at)
        org.rollover += rollover_delta
        org.included += included_delta
        org.granted += granted_delta
        if code == _HOLD:
            org.held += credits
        elif code in _UNHOLD:
            org.held -= credits
        if session_id is not None:
            self._file_session_row(session_id, row)
        if run_id is not None:
            self._by_run.setdefault(run_id, []).append(row)
        if len(self._pending) >= _PENDING_ROWS:
            self.flush()
        return row

    def flush(self) -> None:
        """Move the pending rows into the columns, one conversion per column (``struct`` packs
        a column's values at once, as the array's own type, which ``frombytes`` appends)."""
        pending = self._pending
        if not pending:
            return
        (
            ulids,
            kinds,
            org_codes,
            times,
            credits,
            rollover_deltas,
            included_deltas,
            granted_deltas,
            session_ids,
            run_ids,
            internal,
            billable_seconds,
            attribution_codes,
        ) = zip(*pending, strict=True)
        _extend(self._ulids.high, [ulid >> 64 for ulid in ulids])
        _extend(self._ulids.low, [ulid & _LOW_64 for ulid in ulids])
        _extend(self._kinds, kinds)
        _extend(self._org_codes, org_codes)
        _extend(self._times, times)
        _extend(self._credits, credits)
        _extend(self._rollover_deltas, rollover_deltas)
        _extend(self._included_deltas, included_deltas)
        _extend(self._granted_deltas, granted_deltas)
        self._session_ids.extend(session_ids)
        self._run_ids.extend(run_ids)
        _extend(self._internal, internal)
        _extend(self._billable_seconds, billable_seconds)
        _extend(self._attribution_codes, attribution_codes)
        pending.clear()

    def _file_session_row(self, session_id: str, row: int) -> None:
        """Index ``row`` among the session's rows: the next of its first run of rows (kept as
        first row * 8 + count), or a late one (e.g. a refund days later)."""
        packed = self._by_session.get(session_id)
        if packed is None:
            self._by_session[session_id] = row * 8 + 1
        elif sum(divmod(packed, 8)) == row and packed % 8 < 7:
            self._by_session[session_id] = packed + 1  # the next row of the same charge
        else:
            self._late_session_rows.setdefault(session_id, []).append(row)

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
        if row != self._rows - 1:
            raise ValueError("only the newest ledger row can be retracted")
        self.flush()
        org_code, attribution_code = self._org_codes[row], self._attribution_codes[row]
        org_id = self.orgs[org_code]
        at, credits, code = self._times[row], self._credits[row], self._kinds[row]
        rollover, included, granted = (
            self._rollover_deltas[row],
            self._included_deltas[row],
            self._granted_deltas[row],
        )
        session_id, run_id = self._session_ids[row], self._run_ids[row]
        for column in (
            self._kinds,
            self._org_codes,
            self._times,
            self._credits,
            self._rollover_deltas,
            self._included_deltas,
            self._granted_deltas,
            self._session_ids,
            self._run_ids,
            self._internal,
            self._billable_seconds,
            self._attribution_codes,
        ):
            column.pop()
        self._ulids.pop()
        self._rows = row
        self.orgs.forget(org_code, self._org_codes)
        self.attributions.forget(attribution_code, self._attribution_codes)
        org = self._by_org[org_id]
        org.remove_last(row, at)
        if not org.by_time:  # its first row: the organization was not in the ledger before
            del self._by_org[org_id]
        org.rollover -= rollover
        org.included -= included
        org.granted -= granted
        if code == _HOLD:
            org.held -= credits
        elif code in _UNHOLD:
            org.held += credits
        if session_id is not None:
            late = self._late_session_rows.get(session_id)
            if late:
                late.pop()
                if not late:
                    del self._late_session_rows[session_id]
            else:
                packed = self._by_session[session_id]
                if packed % 8 > 1:
                    self._by_session[session_id] = packed - 1
                else:
                    del self._by_session[session_id]
        if run_id is not None:
            rows = self._by_run[run_id]
            rows.pop()
            if not rows:
                del self._by_run[run_id]

    # -- reading ---------------------------------------------------------------------------

    def entry(self, row: int) -> LedgerEntry:
        if not 0 <= row < self._rows:
            raise IndexError("no such ledger row")
        self.flush()
        attribution = dict(zip(ATTRIBUTION, self.attribution(row), strict=True))
        return LedgerEntry(
            id=format_value("ledger_entry", self._ulids[row]),
            seq=row,
            kind=ENTRY_KINDS[self._kinds[row]],
            org_id=self.orgs[self._org_codes[row]],
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

    def attribution(self, row: int) -> Attribution:
        """A row's attribution fields, in ``ATTRIBUTION`` order, without building the entry."""
        return self.attributions[self.attribution_codes[row]]

    def totals(self, org_id: str) -> tuple[int, int, int, int]:
        """The organization's running ``(rollover, included, granted, held)``."""
        org = self._by_org.get(org_id)
        if org is None:
            return 0, 0, 0, 0
        return org.rollover, org.included, org.granted, org.held

    def __len__(self) -> int:
        return self._rows

    def __iter__(self) -> Iterator[LedgerEntry]:
        return (self.entry(row) for row in range(self._rows))

    def all(self) -> Sequence[LedgerEntry]:
        """Every entry in append order."""
        return tuple(self)

    def org_ids(self) -> list[str]:
        return list(self._by_org)

    def count(self, org_id: str) -> int:
        org = self._by_org.get(org_id)
        return 0 if org is None else len(org.by_time)

    def appended(self, org_id: str, start: int = 0) -> Sequence[LedgerEntry]:
        """The organization's entries in append order, from position ``start``."""
        org = self._by_org.get(org_id)
        if org is None:
            return ()
        return tuple(self.entry(row) for row in sorted(org.by_time)[start:])

    def has_session(self, session_id: str) -> bool:
        return session_id in self._by_session

    def session_rows(self, session_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a session, in append order."""
        packed = self._by_session.get(session_id)
        if packed is None:
            return ()
        first, count = divmod(packed, 8)
        rows = [*range(first, first + count), *self._late_session_rows.get(session_id, ())]
        return tuple(self.entry(row) for row in rows)

    def run_rows(self, run_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a run, in append order (kept after the run is deleted)."""
        return tuple(self.entry(row) for row in self._by_run.get(run_id, ()))

    def window_rows(self, org_id: str, start: float, end: float) -> Sequence[int]:
        """Positions of the organization's rows dated in ``[start, end)``, by time (then append
        order)."""
        org = self._by_org.get(org_id)
        if org is None:
            return ()
        lo = bisect_left(org.times, start)
        hi = bisect_left(org.times, end, lo)
        return org.by_time[lo:hi]

    def window(self, org_id: str, start: float, end: float) -> Sequence[LedgerEntry]:
        """The organization's entries dated in ``[start, end)``, by time (then append order)."""
        return tuple(self.entry(row) for row in self.window_rows(org_id, start, end))

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
        return Table(self._rows, columns)

    def release(self) -> None:
        """Forget every row and running total: who read the ledger in bulk (a run's collector,
        which hands the run over) returns its memory. The ledger is then empty, as a new one."""
        self._start_empty()
