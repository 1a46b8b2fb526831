"""The rules of the billing ledger: what each kind of row means and what a row may say (SIM-5).

An entry states its own effect on the three credit pools (``rollover``, ``included``,
``granted``; GAP-BILL-2) as signed deltas fixed when it is written, so anyone can recompute a
balance from the raw rows without replaying the spending order. ``KIND_RULES`` is the declared
meaning of each kind; ``check_row`` refuses every row that breaks it, and the tests read the
same table. Amounts (``credits``) are non-negative integers; direction comes from the kind. A
debit takes from the pools in the spending order ``split_debit`` gives (GAP-BILL-3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "ATTRIBUTION",
    "ENTRY_KINDS",
    "KIND_RULES",
    "NO_ATTRIBUTION",
    "Attribution",
    "EntryKind",
    "KindRule",
    "LedgerEntry",
    "Pool",
    "TariffLine",
    "attribute",
    "check_row",
    "split_debit",
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


def check_row(
    kind: EntryKind, credits: int, deltas: tuple[int, int, int], billable_seconds: int = 0
) -> None:
    """Refuse a row that breaks the rule of its kind (``KIND_RULES``)."""
    if isinstance(credits, bool) or not isinstance(credits, int):
        raise TypeError("ledger credits are integers")
    if credits < 0 or billable_seconds < 0:
        raise ValueError("ledger amounts are non-negative; the kind gives the direction")
    effect = KIND_RULES[kind].effect
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


#: One row of a session's tariff: (credits per billable second, internal, whether the row carries
#: the session's billable seconds, attribution). ``Ledger.charge_session`` writes one row each.
TariffLine = tuple[int, bool, bool, Attribution]


def split_debit(pools: tuple[int, int, int], credits: int, coverable: int) -> tuple[int, int, int]:
    """Pool deltas for a debit of ``credits`` from the pools ``(rollover, included, granted)``:
    rollover first, then included, then granted (GAP-BILL-3).

    At most ``coverable`` credits are taken (a session charge may not eat into credits held for
    runs); what remains uncovered is the entry's overage. Each delta is <= 0."""
    remaining = credits if credits < coverable else coverable
    if remaining <= 0:
        return 0, 0, 0
    rollover, included, granted = pools
    rollover = 0 if rollover <= 0 else rollover if rollover < remaining else remaining
    remaining -= rollover
    included = 0 if included <= 0 else included if included < remaining else remaining
    remaining -= included
    granted = 0 if granted <= 0 else granted if granted < remaining else remaining
    return -rollover, -included, -granted
