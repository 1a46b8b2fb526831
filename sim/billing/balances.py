"""Balances folded from ledger entries, and the spending order (GAP-BILL-2, GAP-BILL-3).

Why a pure fold: a balance is never stored, only computed from entries. ``Balances.fold`` is the
definition; the service may remember a fold together with the number of entries it covered and
extend it with newer entries (``extend``), which gives the same answer as folding from scratch
(the tests check that) without re-reading an organization's whole history on every charge.

Holds: a run's reservation (GAP-BILL-4) does not move pool credits; it only makes them
unavailable. ``available`` is what new reservations and session starts may count on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from sim.billing.rules import LedgerEntry, split_debit

__all__ = ["Balances", "debit_split", "split_debit"]


@dataclass(frozen=True, slots=True)
class Balances:
    rollover: int = 0
    included: int = 0
    granted: int = 0
    held: int = 0  # open run reservations

    @property
    def total(self) -> int:
        """The balance: rollover + included + granted (GAP-BILL-3)."""
        return self.rollover + self.included + self.granted

    @property
    def available(self) -> int:
        """The balance not held by open run reservations (never negative)."""
        return max(0, self.total - self.held)

    def extend(self, entries: Iterable[LedgerEntry]) -> Balances:
        rollover, included, granted, held = self.rollover, self.included, self.granted, self.held
        for e in entries:
            rollover += e.rollover_delta
            included += e.included_delta
            granted += e.granted_delta
            if e.kind == "reservation":
                held += e.credits
            elif e.kind in ("settlement", "release"):
                held -= e.credits
        return replace(self, rollover=rollover, included=included, granted=granted, held=held)

    @classmethod
    def fold(cls, entries: Iterable[LedgerEntry]) -> Balances:
        return cls().extend(entries)


def debit_split(balances: Balances, credits: int, *, coverable: int) -> tuple[int, int, int]:
    """Pool deltas for a debit of ``credits``: rollover first, then included, then granted.

    At most ``coverable`` credits are taken (a session charge may not eat into credits held for
    runs); what remains uncovered is the entry's overage. Returns ``(rollover, included,
    granted)`` deltas, each <= 0.
    """
    return split_debit(
        (balances.rollover, balances.included, balances.granted), credits, coverable=coverable
    )
