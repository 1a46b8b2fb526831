"""Billing: an append-only credit ledger and everything derived from it (SIM-5).

Why a package: the ledger (``ledger``), the pools folded from it (``balances``), calendar-month
periods (``periods``), metering (``pricing``), the Quota resource (``quota``) and the usage
summary (``usage``) are separate concepts; ``Billing`` (``service``) wires them behind
``sim.ports.BillingPort`` and the read methods the facade calls.
"""

from __future__ import annotations

from sim.billing.balances import Balances, debit_split
from sim.billing.ledger import Ledger
from sim.billing.periods import Month
from sim.billing.quota import QUOTA_STATUSES, quota_status
from sim.billing.rules import ENTRY_KINDS, KIND_RULES, EntryKind, KindRule, LedgerEntry
from sim.billing.service import LOW_BALANCE_EVENT, Billing
from sim.billing.usage import UsageWindow, parse_window, summarize

__all__ = [
    "ENTRY_KINDS",
    "KIND_RULES",
    "LOW_BALANCE_EVENT",
    "QUOTA_STATUSES",
    "Balances",
    "Billing",
    "EntryKind",
    "KindRule",
    "Ledger",
    "LedgerEntry",
    "Month",
    "UsageWindow",
    "debit_split",
    "parse_window",
    "quota_status",
    "summarize",
]
