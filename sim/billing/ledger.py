"""The billing ledger: append-only, immutable entries, indexed by organization and time (SIM-5).

Why it is built this way: every billing figure the API shows (balance, quota, usage) is derived
from these entries and from nothing else, so there is no second running total that could drift
from them. An entry states its own effect on the three credit pools (``rollover``, ``included``,
``granted``; GAP-BILL-2) as signed deltas fixed when it is written, so anyone can recompute a
balance from the raw rows without replaying the spending order.

``KIND_RULES`` is the declared meaning of each kind; ``LedgerEntry`` refuses rows that break it,
and the tests read the same table. Amounts (``credits``) are non-negative integers; direction
comes from the kind.

Scale (issue 4, item 6): each organization has its own list of entries sorted by time, so a
window is two bisections and a slice, never a scan of other organizations' history.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal

from sim.ids import IdFactory

__all__ = [
    "ENTRY_KINDS",
    "KIND_RULES",
    "EntryKind",
    "KindRule",
    "Ledger",
    "LedgerEntry",
    "Pool",
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
        if isinstance(self.credits, bool) or not isinstance(self.credits, int):
            raise TypeError("ledger credits are integers")
        if self.credits < 0 or self.billable_seconds < 0:
            raise ValueError("ledger amounts are non-negative; the kind gives the direction")
        deltas = (self.rollover_delta, self.included_delta, self.granted_delta)
        effect = KIND_RULES[self.kind].effect
        if effect == "credit":
            ok = min(deltas) >= 0 and sum(deltas) == self.credits
        elif effect == "debit":
            ok = max(deltas) <= 0 and -sum(deltas) <= self.credits
        elif effect == "transfer":
            ok = sum(deltas) == 0
        else:  # hold / unhold: the pools are untouched
            ok = deltas == (0, 0, 0)
        if not ok:
            raise ValueError(f"pool deltas {deltas} do not fit a {self.kind} of {self.credits}")

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


class _OrgIndex:
    """One organization's entries: append order (for folds) and time order (for windows)."""

    __slots__ = ("appended", "by_time", "times")

    def __init__(self) -> None:
        self.appended: list[LedgerEntry] = []
        self.times: list[float] = []
        self.by_time: list[LedgerEntry] = []

    def add(self, entry: LedgerEntry) -> None:
        self.appended.append(entry)
        # Ties keep append order: insert after every entry at the same time.
        position = bisect_right(self.times, entry.at)
        self.times.insert(position, entry.at)
        self.by_time.insert(position, entry)


class Ledger:
    """The append-only store; ``record`` is the only way in, nothing is ever changed, and only a
    failed operation's own last row is ever removed (``retract``)."""

    def __init__(self, ids: IdFactory) -> None:
        self._ids = ids
        self._entries: list[LedgerEntry] = []
        self._orgs: dict[str, _OrgIndex] = {}
        self._by_session: dict[str, list[LedgerEntry]] = {}
        self._by_run: dict[str, list[LedgerEntry]] = {}

    def record(
        self, kind: EntryKind, org_id: str, at: float, credits: int, **attribution: Any
    ) -> LedgerEntry:
        """Append one entry and return it (fields of ``LedgerEntry`` by keyword)."""
        entry = LedgerEntry(
            id=self._ids.new("ledger_entry"),
            seq=len(self._entries),
            kind=kind,
            org_id=org_id,
            at=at,
            credits=credits,
            **attribution,
        )
        self._entries.append(entry)
        index = self._orgs.get(org_id)
        if index is None:
            index = self._orgs[org_id] = _OrgIndex()
        index.add(entry)
        if entry.session_id is not None:
            self._by_session.setdefault(entry.session_id, []).append(entry)
        if entry.run_id is not None:
            self._by_run.setdefault(entry.run_id, []).append(entry)
        return entry

    def retract(self, entry: LedgerEntry) -> None:
        """Remove the newest entry, written by an operation that then failed as a whole.

        The one exception to append-only, and only for the last row: no reader can have
        derived anything from it yet, because the operation that wrote it never completed.
        """
        if not self._entries or self._entries[-1] is not entry:
            raise ValueError("only the newest ledger entry can be retracted")
        self._entries.pop()
        index = self._orgs[entry.org_id]
        index.appended.pop()
        position = next(
            i
            for i in range(bisect_left(index.times, entry.at), len(index.by_time))
            if index.by_time[i] is entry
        )
        del index.times[position]
        del index.by_time[position]
        for owner, rows in ((entry.session_id, self._by_session), (entry.run_id, self._by_run)):
            if owner is not None:
                rows[owner].pop()
                if not rows[owner]:
                    del rows[owner]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self._entries)

    def all(self) -> Sequence[LedgerEntry]:
        """Every entry in append order (read-only view)."""
        return tuple(self._entries)

    def org_ids(self) -> list[str]:
        return list(self._orgs)

    def count(self, org_id: str) -> int:
        index = self._orgs.get(org_id)
        return 0 if index is None else len(index.appended)

    def appended(self, org_id: str, start: int = 0) -> Sequence[LedgerEntry]:
        """The organization's entries in append order, from position ``start``."""
        index = self._orgs.get(org_id)
        return () if index is None else index.appended[start:]

    def session_rows(self, session_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a session, in append order."""
        return tuple(self._by_session.get(session_id, ()))

    def run_rows(self, run_id: str) -> Sequence[LedgerEntry]:
        """Every entry attributed to a run, in append order (kept after the run is deleted)."""
        return tuple(self._by_run.get(run_id, ()))

    def window(self, org_id: str, start: float, end: float) -> Sequence[LedgerEntry]:
        """The organization's entries dated in ``[start, end)``, by time (then append order)."""
        index = self._orgs.get(org_id)
        if index is None:
            return ()
        lo = bisect_left(index.times, start)
        hi = bisect_left(index.times, end, lo)
        return index.by_time[lo:hi]
