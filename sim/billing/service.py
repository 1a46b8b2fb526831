"""``Billing``: the ledger-backed implementation of ``BillingPort`` plus quota, usage and plans.

Why it is shaped like this: sessions and runs only hand billing their canonical facts (a
``SessionUsage``, a ``RunCharge`` and amounts) through ``BillingPort``; this class turns them
into ledger rows and answers every billing question by deriving it from those rows. The only
state besides the ledger is bookkeeping that holds no credits: which organizations have an
account, which calendar month is open for each and when it ends (GAP-BILL-2), and the included
credits granted for it. Balances are the ledger's running totals per organization.

Periods close at each UTC month boundary of the virtual clock. One SimPy process (started with
the first account) wakes once per month for all organizations; every public method also catches
up first (one comparison with the organization's next boundary), so the answer is the same
however the clock was driven.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import simpy

from sim.accounts import AccountRegistry
from sim.billing.balances import Balances, debit_split
from sim.billing.exports import quota_table, usage_tables
from sim.billing.ledger import Ledger
from sim.billing.periods import Month
from sim.billing.pricing import run_operation, session_tariff, speech_billing_mode
from sim.billing.quota import Quota, is_low
from sim.billing.rules import LedgerEntry, TariffLine, attribute
from sim.billing.usage import LocalDays, parse_window, summarize
from sim.columns import Table
from sim.config import PlanConfig
from sim.errors import InternalError, NotFound, QuotaExceeded
from sim.kernel import Kernel
from sim.ports import RunCharge, SessionUsage

__all__ = ["LOW_BALANCE_EVENT", "Billing"]

LOW_BALANCE_EVENT = "billing.low_balance"

#: ``note`` values of the period bookkeeping rows (kept stable: collectors group by them).
SIGNUP_NOTE = "signup_grant"
INCLUDED_NOTE = "included_credits"
_SIGNUP, _INCLUDED = attribute(note=SIGNUP_NOTE), attribute(note=INCLUDED_NOTE)
_TARIFFS_KEPT = 4096
_ZONES_KEPT = 64


class Billing:
    """Credits for one simulated platform; implements ``sim.ports.BillingPort``."""

    def __init__(self, kernel: Kernel, accounts: AccountRegistry) -> None:
        self._kernel = kernel
        self._clock = kernel.clock
        self._config = kernel.config.billing
        self._accounts = accounts
        self.ledger = Ledger(kernel.ids)
        self._period: dict[str, Month] = {}  # open calendar month per organization
        self._period_end: dict[str, float] = {}  # when it closes (simulated seconds)
        self._included: dict[str, int] = {}  # included credits granted for the open period
        self._opened_plan: dict[str, str] = {}
        self._process: simpy.Process | None = None
        # Session tariffs by (quality, surface, embed, avatar): a bounded cache of pure values.
        self._tariffs: dict[tuple[str, str, str | None, str], tuple[TariffLine, ...]] = {}
        self._settings = kernel.settings
        #: The local dates of each timezone a usage summary was asked in (``LocalDays``).
        self._local_days: dict[str, LocalDays] = {}

    # -- BillingPort ---------------------------------------------------------------------------

    def open_account(self, org_id: str, plan_key: str) -> None:
        """The signup grant and the first period's included credits; a second call is a no-op."""
        if org_id in self._period:
            return
        self._config.plan(plan_key)  # KeyError for an unknown plan, as AccountRegistry does
        self._open(org_id, plan_key, self._clock.now)

    def ensure_can_start_session(self, org_id: str) -> None:
        end = self._period_end.get(org_id)
        if end is None or end <= self._clock.now:  # its period ended: ``_account`` rolls it
            self._account(org_id)
        rollover, included, granted, held = self.ledger.totals(org_id)
        available = rollover + included + granted - held
        available = available if available > 0 else 0  # ``Balances.available``: never below 0
        if available < self._settings.min_session_start_credits:
            raise QuotaExceeded(
                "insufficient_credits",
                "The credit balance is too low to start a session.",
            )

    def charge_session(self, usage: SessionUsage) -> None:
        """Charge a finished session once, from its canonical usage (GAP-SES-3, GAP-BILL-1).

        Its rows come from the tariff of its kind (kept per kind: ``session_tariff``) and are
        written by one ``Ledger.charge_session``; the low-balance check looks at the plan only
        when the balance fell below the highest threshold any plan has."""
        org_id = usage.org_id
        now = self._clock.now
        end = self._period_end.get(org_id)
        if end is None or end <= now:  # its period ended: ``_account`` rolls it
            self._account(org_id)
        ledger = self.ledger
        if ledger.has_session(usage.session_id):
            return  # a replayed usage event: already charged
        if usage.ended_at > now:
            raise ValueError("a session is charged when it ends, not before")
        seconds = usage.billable_seconds
        if seconds <= 0:
            return
        kind = (usage.quality, usage.billing_surface, usage.embed_id, usage.avatar_id)
        tariff = self._tariffs.get(kind)
        if tariff is None:
            if len(self._tariffs) >= _TARIFFS_KEPT:
                self._tariffs.clear()
            tariff = self._tariffs[kind] = session_tariff(self._config, *kind)
        before, after = ledger.charge_session(
            org_id, usage.ended_at, usage.session_id, seconds, tariff
        )
        if after < self._settings.highest_low_balance_threshold:  # else no plan calls it low
            self._after_debit(org_id, before)

    def ensure_can_reserve(self, org_id: str, credits: int) -> None:
        """Refuse (402) a run whose ``credits`` the available balance cannot hold."""
        _check_amount(credits)
        self._account(org_id)
        if credits > self._balances(org_id).available:
            raise QuotaExceeded(
                "insufficient_credits",
                f"This run needs {credits} credits; the available balance is lower.",
            )

    def reserve_run(self, charge: RunCharge, credits: int) -> None:
        """Hold ``credits`` for a run (GAP-BILL-4); a repeat for the same run is ignored."""
        org_id = charge.org_id
        if self._reservation(charge.run_id) is not None:
            return
        self.ensure_can_reserve(org_id, credits)
        self.ledger.append(
            "reservation",
            org_id,
            self._clock.now,
            credits,
            run_id=charge.run_id,
            internal=charge.internal_model,
            attribution=attribute(
                model=charge.model,
                billing_surface=charge.billing_surface,
                speech_billing_mode=speech_billing_mode(self._config, charge.billing_surface),
                operation=run_operation(charge.model, charge.operation),
                pricing_version=charge.pricing_version,
            ),
        )

    def cancel_reservation(self, run_id: str) -> None:
        """Withdraw the reservation of a run whose create failed after recording it: the row
        goes, as if it had never been written, and the running balances with it
        (``Ledger.retract``, ``sim.journal``)."""
        reservation = self._reservation(run_id)
        if reservation is not None:
            self.ledger.retract(reservation.seq)

    def settle_run(self, run_id: str, credits: int) -> None:
        """Charge ``min(credits, reserved)`` and release the rest; a closed run is left alone."""
        _check_amount(credits)
        reservation = self._open_reservation(run_id)
        if reservation is None:
            return
        org_id = reservation.org_id
        charged = min(credits, reservation.credits)
        balances = self._balances(org_id)
        before = balances.total
        # The run's own hold is what pays for it; other runs' holds stay untouched.
        coverable = balances.total - (balances.held - reservation.credits)
        deltas = debit_split(balances, charged, coverable=coverable)
        now = self._clock.now
        self.ledger.append(
            "settlement",
            org_id,
            now,
            charged,
            rollover_delta=deltas[0],
            included_delta=deltas[1],
            granted_delta=deltas[2],
            **_run_attribution(reservation),
        )
        if reservation.credits > charged:
            self.ledger.append(
                "release",
                org_id,
                now,
                reservation.credits - charged,
                **_run_attribution(reservation),
            )
        self._after_debit(org_id, before)

    def release_run(self, run_id: str) -> None:
        """Give the whole reservation back (failure, cancel, capacity timeout)."""
        reservation = self._open_reservation(run_id)
        if reservation is None:
            return
        self.ledger.append(
            "release",
            reservation.org_id,
            self._clock.now,
            reservation.credits,
            **_run_attribution(reservation),
        )

    # -- other ledger movements ------------------------------------------------------------------

    def refund(
        self,
        org_id: str,
        credits: int,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        note: str | None = None,
    ) -> LedgerEntry:
        """Give credits back (support's decision); they land in the granted pool, never expire."""
        _check_amount(credits)
        self._account(org_id)
        return self.ledger.record(
            "refund",
            org_id,
            self._clock.now,
            credits,
            granted_delta=credits,
            session_id=session_id,
            run_id=run_id,
            note=note,
        )

    def roll_periods(self) -> None:
        """Close every period that ended at or before now, for every organization."""
        now = self._clock.now
        for org_id in list(self._period):
            self._roll(org_id, now)

    # -- reads ----------------------------------------------------------------------------------

    def balance(self, org_id: str) -> int:
        self._account(org_id)
        return self._balances(org_id).total

    def balances(self, org_id: str) -> Balances:
        """Pools and holds of an organization, folded from its entries."""
        self._account(org_id)
        return self._balances(org_id)

    def quota(self, org_id: str) -> dict[str, Any]:
        """The Quota resource (RES-QUOTA-1)."""
        self._account(org_id)
        return self._render_quota(org_id)

    def usage(
        self,
        org_id: str,
        *,
        period: str | None = None,
        period_start: str | None = None,
        period_end: str | None = None,
        timezone: str | None = None,
    ) -> dict[str, Any]:
        """The usage summary of ``GET /v1/usage`` (RES-USAGE-1..3, EP-USAGE-1)."""
        window = parse_window(
            self._clock,
            self._config,
            period=period,
            period_start=period_start,
            period_end=period_end,
            timezone=timezone,
        )
        self._account(org_id)
        days = self._local_days.get(window.timezone)
        if days is None or days.tz is not window.tz:
            if len(self._local_days) >= _ZONES_KEPT:
                self._local_days.clear()
            days = self._local_days[window.timezone] = LocalDays(self._clock, window.tz)
        return summarize(self.ledger, org_id, window, self._clock, self._config, days)

    def export_quotas(self) -> Table:
        """Every account's quota as ``GET /v1/quota`` answers it now, in the order the accounts
        were opened (``quota_table``)."""
        return quota_table([(org_id, self.quota(org_id)) for org_id in list(self._period)])

    def export_usage(
        self, timezones: Sequence[str], period_start: str, period_end: str
    ) -> tuple[Table, Table]:
        """``GET /v1/usage`` of every account for the window from ``period_start`` to
        ``period_end`` in each of ``timezones`` (accounts in the order they were opened, then
        the timezones in theirs), as ``usage_tables``."""
        return usage_tables(
            [
                (
                    org_id,
                    timezone,
                    self.usage(
                        org_id, period_start=period_start, period_end=period_end, timezone=timezone
                    ),
                )
                for org_id in list(self._period)
                for timezone in timezones
            ]
        )

    def plans(self) -> dict[str, Any]:
        """The body of the public ``GET /v1/billing/plans`` (GAP-PUB-2)."""
        return {"object": "list", "data": [plan.to_resource() for plan in self._config.plans]}

    def entries(self, org_id: str | None = None) -> list[LedgerEntry]:
        """Immutable ledger rows in append order (all, or one organization's)."""
        if org_id is None:
            return list(self.ledger.all())
        return list(self.ledger.appended(org_id))

    def plan(self, org_id: str) -> PlanConfig:
        """The organization's current plan (the account registry's, else the one opened with)."""
        try:
            return self._config.plan(self._accounts.organization(org_id).plan_key)
        except NotFound:
            return self._config.plan(self._opened_plan[org_id])

    # -- internals ------------------------------------------------------------------------------

    def _account(self, org_id: str) -> None:
        """Make sure the organization has a billing account with its periods closed up to now.

        An organization the account registry knows but that never had ``open_account`` called
        is opened as of its creation time (its grant dated then), which is what it would have
        had if the platform had opened it at signup.
        """
        end = self._period_end.get(org_id)
        if end is None:
            try:
                org = self._accounts.organization(org_id)
            except NotFound:
                raise NotFound(
                    "organization.not_found", f"No billing account for {org_id}."
                ) from None
            self._open(org_id, org.plan_key, min(org.created_at, self._clock.now))
        elif end <= self._clock.now:
            self._roll(org_id, self._clock.now)

    def _open(self, org_id: str, plan_key: str, at: float) -> None:
        self._opened_plan[org_id] = plan_key
        self._set_period(org_id, Month.containing(self._clock, at))
        grant = self._config.signup_grant_credits
        if grant > 0:
            self.ledger.append("grant", org_id, at, grant, granted_delta=grant, attribution=_SIGNUP)
        self._grant_included(org_id, at)
        if self._process is None:
            self._process = self._clock.env.process(self._period_loop())
        self._roll(org_id, self._clock.now)

    def _set_period(self, org_id: str, month: Month) -> None:
        self._period[org_id] = month
        self._period_end[org_id] = month.end(self._clock)
        self._included[org_id] = 0

    def _grant_included(self, org_id: str, at: float) -> None:
        included = self.plan(org_id).included_credits
        if included > 0:
            self.ledger.append(
                "grant", org_id, at, included, included_delta=included, attribution=_INCLUDED
            )
            self._included[org_id] += included

    def _roll(self, org_id: str, through: float) -> None:
        """Close the organization's periods that end at or before ``through`` (GAP-BILL-2)."""
        month = self._period[org_id]
        if self._period_end[org_id] > through:
            return
        before = self._balances(org_id).total
        while (boundary := self._period_end[org_id]) <= through:
            balances = self._balances(org_id)
            if balances.rollover > 0:  # last period's rollover has had its period: it expires
                self.ledger.append(
                    "expiry", org_id, boundary, balances.rollover, rollover_delta=-balances.rollover
                )
            unused = max(0, balances.included)
            carried = min(unused, self.plan(org_id).rollover_cap_credits)
            if carried > 0:
                self.ledger.append(
                    "rollover",
                    org_id,
                    boundary,
                    carried,
                    included_delta=-carried,
                    rollover_delta=carried,
                )
            if unused > carried:
                self.ledger.append(
                    "expiry", org_id, boundary, unused - carried, included_delta=-(unused - carried)
                )
            month = month.next()
            self._set_period(org_id, month)
            self._grant_included(org_id, boundary)
        self._after_debit(org_id, before)

    def _period_loop(self) -> Generator[simpy.Event, Any, None]:
        """One wake-up per calendar month for all organizations together."""
        boundary = Month.containing(self._clock, self._clock.now).end(self._clock)
        while True:
            yield self._clock.env.timeout(max(0.0, boundary - self._clock.now))
            for org_id in list(self._period):
                self._roll(org_id, boundary)
            boundary = Month.containing(self._clock, boundary).end(self._clock)

    def _balances(self, org_id: str) -> Balances:
        return Balances(*self.ledger.totals(org_id))

    def _render_quota(self, org_id: str) -> dict[str, Any]:
        return Quota(
            balances=self._balances(org_id),
            plan=self.plan(org_id),
            included_limit=self._included[org_id],
            period=self._period[org_id],
            min_session_start_credits=self._config.min_session_start_credits,
        ).to_resource(self._clock)

    def _after_debit(self, org_id: str, before: int) -> None:
        """Emit ``billing.low_balance`` when the balance just crossed the threshold downwards."""
        threshold = self.plan(org_id).low_balance_threshold_credits
        if is_low(before, threshold):
            return
        if is_low(sum(self.ledger.totals(org_id)[:3]), threshold):
            quota = self._render_quota(org_id)
            self._kernel.events.emit(LOW_BALANCE_EVENT, org_id, {"object": quota})

    def _reservation(self, run_id: str) -> LedgerEntry | None:
        row = self.ledger.run_row(run_id, "reservation")
        return None if row is None else self.ledger.entry(row)

    def _open_reservation(self, run_id: str) -> LedgerEntry | None:
        """The run's reservation if it is still open; ``None`` once settled or released."""
        reservation = self._reservation(run_id)
        if reservation is None:
            raise InternalError("billing.no_reservation", f"Run {run_id} holds no reservation.")
        self._account(reservation.org_id)
        if self.ledger.run_row(run_id, "settlement", "release") is not None:
            return None
        return reservation


def _check_amount(credits: int) -> None:
    if isinstance(credits, bool) or not isinstance(credits, int) or credits < 0:
        raise ValueError("credits are non-negative integers")


def _run_attribution(reservation: LedgerEntry) -> dict[str, Any]:
    return {
        "run_id": reservation.run_id,
        "internal": reservation.internal,
        "attribution": attribute(
            model=reservation.model,
            billing_surface=reservation.billing_surface,
            speech_billing_mode=reservation.speech_billing_mode,
            operation=reservation.operation,
            pricing_version=reservation.pricing_version,
        ),
    }
