"""Usage, quota and plans, all computed from one ledger of settled charges.

Sessions settle when they become terminal (billable seconds times the quality's credits per
second); runs settle when they succeed. Usage sums the ledger over a window; quota sums it over
the current calendar month, so the two always agree with what was charged. Each organization
gets the signup grant (2,000 credits, $20 at a cent a credit) on top of purchased credits and its
plan's monthly included credits; spending draws on the included credits first.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .clock import iso
from .errors import invalid
from .store import PLANS, SIGNUP_GRANT_CREDITS, Org
from .validation import parse_timestamp

if TYPE_CHECKING:
    from .service import Service

LOW_BALANCE_THRESHOLD = 1_000
INTERNAL_MODELS: frozenset[str] = frozenset()
RECENT_CHARGES = 10


def month_bounds(moment: datetime, shift: int = 0) -> tuple[datetime, datetime]:
    """[start, end) of the UTC calendar month containing ``moment``, shifted by whole months."""
    year, month = moment.year, moment.month + shift
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


class Billing:
    def __init__(self, service: Service) -> None:
        self.svc = service

    # -- usage --------------------------------------------------------------------------------

    def window(self, query: dict[str, str], t: float) -> tuple[datetime, datetime]:
        reading, faults = self.svc.reading, self.svc.faults
        now = self.svc.clock.at(t)
        period = query.get("period")
        start_raw, end_raw = query.get("period_start"), query.get("period_end")
        explicit = start_raw is not None or end_raw is not None
        if period is not None and explicit and not faults.on("usage_period_and_window_accepted"):
            raise invalid(
                reading,
                "usage.period_conflict",
                "Give either period or period_start and period_end, not both.",
                "period",
            )
        if period is not None:
            if period not in ("current_month", "previous_month"):
                raise invalid(
                    reading,
                    "parameter.invalid_value",
                    "period must be current_month or previous_month.",
                    "period",
                )
            if period == "previous_month" and not faults.on("usage_previous_month_is_current"):
                return month_bounds(now, -1)
            return month_bounds(now)
        if explicit:
            if start_raw is None or end_raw is None:
                if faults.on("usage_window_half_accepted"):
                    return month_bounds(now)
                missing = "period_start" if start_raw is None else "period_end"
                raise invalid(
                    reading,
                    "parameter.missing",
                    "period_start and period_end must be given together.",
                    missing,
                )
            start = parse_timestamp(start_raw, "period_start", reading)
            end = parse_timestamp(end_raw, "period_end", reading)
            if end <= start:
                raise invalid(
                    reading,
                    "parameter.invalid_value",
                    "period_end must be after period_start.",
                    "period_end",
                )
            return start, end
        return month_bounds(now)

    def timezone(self, query: dict[str, str]) -> ZoneInfo:
        reading = self.svc.reading
        name = reading.usage_tz_param
        raw = query.get(name)
        if raw is None or raw == "":
            return ZoneInfo("UTC")
        if len(raw) > 64:
            raise invalid(reading, "parameter.too_long", f"{name} is at most 64 characters.", name)
        try:
            return ZoneInfo(raw)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise invalid(
                reading, "parameter.invalid_value", f"{raw!r} is not an IANA timezone.", name
            ) from None

    def usage(self, org: Org, query: dict[str, str], t: float) -> dict[str, Any]:
        reading, faults, clock, store = (
            self.svc.reading,
            self.svc.faults,
            self.svc.clock,
            self.svc.store,
        )
        start, end = self.window(query, t)
        tz = self.timezone(query)
        lo, hi = clock.seconds_of(start), clock.seconds_of(end)
        rows = [c for c in store.charges if c.org_id == org.id and lo <= c.at < hi]
        by_surface: dict[str, int] = defaultdict(int)
        by_model: dict[str, int] = defaultdict(int)
        by_quality: dict[str, int] = defaultdict(int)
        by_mode: dict[str, int] = defaultdict(int)
        daily: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        by_operation: dict[str, int] = defaultdict(int)
        sessions: set[str] = set()
        for c in rows:
            by_surface[c.surface] += c.credits
            if c.model is not None and c.model not in INTERNAL_MODELS:
                key = c.run_id if faults.on("usage_by_model_keyed_by_run") and c.run_id else c.model
                by_model[key] += c.credits
            if c.operation is not None:
                by_operation[c.operation] += c.credits
            if c.session_id is not None:
                sessions.add(c.session_id)
                assert c.quality is not None
                by_quality[c.quality] += (
                    c.credits if faults.on("usage_by_quality_in_credits") else c.billable_seconds
                )
            if c.speech_mode is not None:
                by_mode[c.speech_mode] += c.credits
            zone = UTC if faults.on("usage_daily_ignores_timezone") else tz
            day = clock.at(c.at).astimezone(zone).date().isoformat()
            daily[day][c.surface] += c.credits
        if faults.on("usage_sessions_counts_unbilled"):
            sessions |= {
                s.id
                for s in store.sessions.values()
                if s.org_id == org.id and lo <= s.created_at < hi
            }
        if reading.speech_modes_always:
            for mode in ("customer_managed", "platform_managed"):
                by_mode.setdefault(mode, 0)
        extra = reading.usage_extra_fields
        recent = [c for c in rows if c.model is not None][-RECENT_CHARGES:][::-1]
        return {
            "billable_seconds": sum(c.billable_seconds for c in rows),
            "sessions": len(sessions),
            "credits_charged": sum(c.credits for c in rows),
            "period_start": iso(start),
            "period_end": iso(end),
            "by_billing_surface": dict(by_surface),
            "by_model": dict(by_model),
            "by_quality": dict(by_quality),
            "by_speech_billing_mode": dict(by_mode),
            "daily_credits_by_billing_surface": {day: dict(v) for day, v in sorted(daily.items())},
            extra["embeds"]: [],
            extra["operations"]: dict(by_operation),
            extra["model_charges"]: [
                {
                    "run_id": c.run_id,
                    "model": c.model,
                    "credits": c.credits,
                    "settled_at": clock.iso(c.at),
                }
                for c in recent
            ],
            extra["studio_charges"]: [],
        }

    # -- quota --------------------------------------------------------------------------------

    def quota_numbers(self, org: Org, t: float) -> dict[str, Any]:
        clock = self.svc.clock
        start, end = month_bounds(clock.at(t))
        lo, hi = clock.seconds_of(start), clock.seconds_of(end)
        spent_now = sum(
            c.credits for c in self.svc.store.charges if c.org_id == org.id and lo <= c.at < hi
        )
        spent_before = sum(
            c.credits for c in self.svc.store.charges if c.org_id == org.id and c.at < lo
        )
        limit = org.plan.included_credits
        used = min(limit, spent_now)
        overflow = spent_now - used
        rollover = max(0, SIGNUP_GRANT_CREDITS + org.purchased_credits - spent_before - overflow)
        included_balance = limit - used
        balance = included_balance + rollover
        return {
            "balance_credits": balance,
            "included_balance_credits": included_balance,
            "included_credits_limit": limit,
            "included_credits_used": used,
            "rollover_balance_credits": rollover,
            "low_balance_threshold_credits": LOW_BALANCE_THRESHOLD,
            "can_start_session": balance > 0,
            "current_period_start": iso(start),
            "current_period_end": iso(end),
            "plan_key": org.plan_key,
            "status": "active",
        }

    def quota(self, org: Org, t: float) -> dict[str, Any]:
        body = self.quota_numbers(org, t)
        if self.svc.faults.on("quota_balance_float"):
            body["balance_credits"] = float(body["balance_credits"])
        return body

    # -- plans --------------------------------------------------------------------------------

    def plans(self) -> dict[str, Any]:
        reading = self.svc.reading
        plans = [
            {
                "key": p.key,
                "name": p.name,
                "monthly_price_usd": p.monthly_price_usd,
                "included_credits": p.included_credits,
                "max_session_duration_seconds": reading.plan_max_duration[p.key],
                "concurrent_sessions": p.concurrent_sessions,
                "run_deletion": p.can_delete_runs,
                "signup_grant_credits": SIGNUP_GRANT_CREDITS,
            }
            for p in PLANS.values()
        ]
        if reading.public_style == "a":
            return {"object": "list", "data": plans}
        return {"plans": plans, "currency": "usd", "credit_value_usd": 0.01}
