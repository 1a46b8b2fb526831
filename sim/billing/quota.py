"""The Quota resource and its status (RES-QUOTA-1, GAP-BILL-3).

Why separate from the service: the quota is a rendering of derived numbers (balances folded from
the ledger, the plan, the current period) and the rules for ``status`` and ``can_start_session``
are small pure functions that tests and the low-balance detector share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim.billing.balances import Balances
from sim.billing.periods import Month
from sim.clock import Clock
from sim.config import PlanConfig

__all__ = ["QUOTA_STATUSES", "Quota", "is_low", "quota_status"]

QUOTA_STATUSES: tuple[str, ...] = ("active", "low_balance", "exhausted")


def is_low(balance: int, threshold: int) -> bool:
    """Below the plan's low-balance threshold; crossing into it emits ``billing.low_balance``."""
    return balance < threshold


def quota_status(balance: int, threshold: int) -> str:
    if balance <= 0:
        return "exhausted"
    if balance < threshold:
        return "low_balance"
    return "active"


@dataclass(frozen=True, slots=True)
class Quota:
    """An organization's quota at one moment: derived numbers, rendered by ``to_resource``."""

    balances: Balances
    plan: PlanConfig
    included_limit: int  # included credits granted for the open period
    period: Month
    min_session_start_credits: int

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        """The Quota resource, every seed field (integers >= 0, timestamps, plan key, status)."""
        balances, plan = self.balances, self.plan
        balance = max(0, balances.total)
        included = max(0, balances.included)
        return {
            "balance_credits": balance,
            "included_balance_credits": included,
            "included_credits_limit": self.included_limit,
            "included_credits_used": max(0, self.included_limit - included),
            "rollover_balance_credits": max(0, balances.rollover),
            "low_balance_threshold_credits": plan.low_balance_threshold_credits,
            "can_start_session": balances.available >= self.min_session_start_credits,
            "current_period_start": clock.timestamp(self.period.start(clock)),
            "current_period_end": clock.timestamp(self.period.end(clock)),
            "plan_key": plan.key,
            "status": quota_status(balance, plan.low_balance_threshold_credits),
        }
