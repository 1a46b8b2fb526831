"""Narrow interfaces between the domain's parts.

Sessions and runs never touch ledger entries: they hand billing exactly what it needs through
``BillingPort``. The canonical record of a session's usage is ``SessionUsage`` (the payload of the
final ``session.usage`` event); runs reserve, settle and release through ``RunCharge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

__all__ = ["AvatarLookup", "BillingPort", "RunCharge", "SessionUsage"]


class SessionUsage(NamedTuple):
    """The final, canonical usage of one session; charged exactly once per ``session_id``, and
    immutable: every session that ran hands one to billing when it ends."""

    session_id: str
    org_id: str
    quality: str
    billing_surface: str
    billable_seconds: int
    frames: int
    ended_at: float  # simulated seconds; the charge is dated here
    avatar_id: str
    embed_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunCharge:
    """What a run's reservation is for (attribution of the ledger rows)."""

    run_id: str
    org_id: str
    model: str
    operation: str
    pricing_version: str
    billing_surface: str = "api"
    internal_model: bool = False


class BillingPort(Protocol):
    def open_account(self, org_id: str, plan_key: str) -> None:
        """Start an organization's billing: the one-time signup grant and its first period."""

    def ensure_can_start_session(self, org_id: str) -> None:
        """Raise ``QuotaExceeded('insufficient_credits')`` when the balance is too low."""

    def charge_session(self, usage: SessionUsage) -> None:
        """Charge a finished session from its canonical usage; a repeat is ignored."""

    def ensure_can_reserve(self, org_id: str, credits: int) -> None:
        """Raise ``QuotaExceeded('insufficient_credits')`` when ``credits`` cannot be held."""

    def reserve_run(self, charge: RunCharge, credits: int) -> None:
        """Hold ``credits`` for a run or raise ``QuotaExceeded('insufficient_credits')``."""

    def cancel_reservation(self, run_id: str) -> None:
        """Withdraw the reservation of a run whose create failed (nothing was held)."""

    def settle_run(self, run_id: str, credits: int) -> None:
        """Turn the run's reservation into a charge of ``credits`` (at most the reservation)."""

    def release_run(self, run_id: str) -> None:
        """Give back a run's reservation (failure, cancel, capacity timeout)."""


class AvatarLookup(Protocol):
    def require_usable(self, org_id: str, avatar_id: str) -> None:
        """Accept a stock avatar or the organization's own ``ready`` avatar.

        Raise ``NotFound('avatar.not_found', param='avatar_id')`` when the avatar does not exist
        for this organization, ``Conflict('avatar.not_ready', param='avatar_id')`` when it is
        still processing or failed (GAP-SES-8).
        """
