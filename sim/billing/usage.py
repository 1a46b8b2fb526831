"""The usage summary: a window of one organization's ledger rendered as the seed's resource.

Why two steps: ``parse_window`` turns the query (``period`` or the explicit pair, and the
timezone; GAP-USAGE-2) into a ``UsageWindow`` or refuses it with ``Unprocessable``, and
``summarize`` is a pure function from that window's rows to the JSON-ready dict. The service
gives ``summarize`` only the positions of the organization's rows in ``[start, end)`` (found by
bisection), and it reads the ledger's columns for those rows, so the cost of a summary depends on
that window, not on the size of the whole ledger.

Counting rules (GAP-USAGE-1, GAP-USAGE-3): usage is the ``charge`` and ``settlement`` rows, dated
when they settle. ``billable_seconds``/``by_quality`` sum the seconds carried by session charges
(each session's seconds are carried by one row only). ``by_model`` leaves out rows without a
model and rows of internal models. Daily buckets use the local calendar date of each row in the
requested IANA timezone, so a day may hold 23 or 25 hours of charges.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sim.billing.ledger import ATTRIBUTION, ENTRY_KINDS, KIND_RULES, Ledger
from sim.billing.periods import Month
from sim.clock import Clock
from sim.config import BillingConfig
from sim.errors import Unprocessable

__all__ = [
    "PERIODS",
    "SPEECH_BILLING_MODES",
    "STUDIO_SURFACE",
    "LocalDays",
    "UsageWindow",
    "parse_timestamp",
    "parse_window",
    "summarize",
]

PERIODS: tuple[str, ...] = ("current_month", "previous_month")
SPEECH_BILLING_MODES: tuple[str, ...] = ("customer_managed", "platform_managed")
#: Studio charges (``recent_settled_charges.studio``) are those of this billing surface.
STUDIO_SURFACE = "video_generation"

_TIMESTAMP = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|\+00:00)$"
)
_TZ_CHARS = re.compile(r"^[A-Za-z0-9_+\-/]+$")


@dataclass(frozen=True, slots=True)
class UsageWindow:
    start: float  # simulated seconds, inclusive
    end: float  # simulated seconds, exclusive
    timezone: str
    tz: ZoneInfo


def _window_error(message: str, param: str) -> Unprocessable:
    return Unprocessable("usage.window_invalid", message, param=param)


def parse_timestamp(text: str, param: str) -> datetime:
    """An ISO-8601 UTC instant in whole seconds (``Z`` or ``+00:00``), or 422 naming ``param``."""
    match = _TIMESTAMP.match(text)
    if match is None:
        raise _window_error(
            f"{param} must be an ISO-8601 UTC timestamp such as 2026-01-01T00:00:00Z.", param
        )
    year, month, day, hour, minute, second, fraction, _ = match.groups()
    if fraction is not None and int(fraction) != 0:
        raise _window_error(f"{param} must be a whole second.", param)
    try:
        return datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC
        )
    except ValueError:
        raise _window_error(f"{param} is not a valid date and time.", param) from None


def _zone(name: str, config: BillingConfig) -> ZoneInfo:
    limit = config.usage_timezone_max_length
    if len(name) > limit:
        raise Unprocessable(
            "usage.timezone_invalid",
            f"timezone must be at most {limit} characters.",
            param="timezone",
        )
    if _TZ_CHARS.match(name) is not None:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    raise Unprocessable(
        "usage.timezone_invalid", f"{name!r} is not an IANA timezone name.", param="timezone"
    )


def parse_window(
    clock: Clock,
    config: BillingConfig,
    *,
    period: str | None = None,
    period_start: str | None = None,
    period_end: str | None = None,
    timezone: str | None = None,
) -> UsageWindow:
    """Validate the query of ``GET /v1/usage`` (EP-USAGE-1, GAP-USAGE-2)."""
    name = "UTC" if timezone is None else timezone
    tz = _zone(name, config)
    explicit = period_start is not None or period_end is not None
    if period is not None and explicit:
        raise _window_error(
            "Give either period or period_start and period_end, not both.", "period"
        )
    if explicit:
        if period_start is None:
            raise _window_error("period_start is required with period_end.", "period_start")
        if period_end is None:
            raise _window_error("period_end is required with period_start.", "period_end")
        start_dt = parse_timestamp(period_start, "period_start")
        end_dt = parse_timestamp(period_end, "period_end")
        if end_dt <= start_dt:
            raise _window_error("period_end must be after period_start.", "period_end")
        max_days = config.usage_window_max_days
        if end_dt - start_dt > timedelta(days=max_days):
            raise _window_error(f"The window may span at most {max_days} days.", "period_end")
        return UsageWindow(clock.seconds_at(start_dt), clock.seconds_at(end_dt), name, tz)
    chosen = "current_month" if period is None else period
    if chosen not in PERIODS:
        raise Unprocessable(
            "validation.enum", f"period must be one of {', '.join(PERIODS)}.", param="period"
        )
    month = Month.containing(clock, clock.now)
    if chosen == "previous_month":
        month = month.previous()
    return UsageWindow(month.start(clock), month.end(clock), name, tz)


def _add(totals: dict[str, int], key: str, amount: int) -> None:
    totals[key] = totals.get(key, 0) + amount


def _sorted(totals: dict[str, int]) -> dict[str, int]:
    return dict(sorted(totals.items()))


_USAGE_KINDS = frozenset(code for code, kind in enumerate(ENTRY_KINDS) if KIND_RULES[kind].usage)
_CHARGE, _SETTLEMENT = ENTRY_KINDS.index("charge"), ENTRY_KINDS.index("settlement")
_MODEL, _SURFACE, _EMBED, _AVATAR = (
    ATTRIBUTION.index(f) for f in ("model", "billing_surface", "embed_id", "avatar_id")
)
_DAY_BUCKET = 900.0  # seconds: local midnight of every current timezone falls on one
_BUCKETS_KEPT = 1 << 16  # about 680 days of buckets per timezone


class LocalDays:
    """The local date of simulated instants in one timezone, kept per 15-minute bucket.

    A bucket whose two ends fall on different local dates has no date of its own (``None``):
    its instants are converted one by one, so the dates are exact whatever the zone's offsets.
    A bucket's date depends on nothing but the zone, so ``Billing`` keeps one of these per zone
    for every summary: the organizations of a run read the same buckets, and a conversion costs
    far more than the rows of a bucket do (bounded: the buckets are forgotten past
    ``_BUCKETS_KEPT``).
    """

    __slots__ = ("_buckets", "_clock", "tz")

    def __init__(self, clock: Clock, tz: ZoneInfo) -> None:
        self._clock = clock
        self.tz = tz
        self._buckets: dict[float, str | None] = {}

    def date(self, seconds: float) -> str:
        return self._clock.datetime_at(seconds).astimezone(self.tz).date().isoformat()

    def of_bucket(self, bucket: float) -> str | None:
        """The date of every instant of ``bucket`` (``seconds // _DAY_BUCKET``), if one."""
        day = self._buckets.get(bucket, "")
        if day == "":
            if len(self._buckets) >= _BUCKETS_KEPT:
                self._buckets.clear()
            first = self.date(bucket * _DAY_BUCKET)
            last = self.date((bucket + 1) * _DAY_BUCKET - 1e-3)
            day = self._buckets[bucket] = first if first == last else None
        return day


#: A group of usage rows summed together: (attribution code, internal, whether the row is a
#: session charge, local date).
_Group = tuple[int, int, bool, str]


def summarize(
    ledger: Ledger,
    rows: Sequence[int],
    window: UsageWindow,
    clock: Clock,
    config: BillingConfig,
    local_days: LocalDays | None = None,
) -> dict[str, Any]:
    """The usage summary of ``rows`` (positions of one organization's rows dated inside
    ``window``); ``local_days``: the dates of the window's timezone, if kept by the caller.

    Two passes: the rows are summed into groups of what tells them apart in the summary
    (attribution, internal, whether a session charge, local date), then each group is added to
    the slices its attribution names. A month's rows are many and its groups few, and every
    slice is a sum, so this is the per-row rendering's answer (a test holds them to the same
    bytes) at a fraction of its cost per row. Groups come in the order of their first row, so a
    slice's keys first appear in row order, as they would row by row.
    """
    start, end = window.start, window.end
    sessions: set[str] = set()
    groups: dict[_Group, list[int]] = {}  # [credits, billable seconds]
    embeds: dict[str, list[int]] = {}
    settled: list[int] = []
    if local_days is None or local_days.tz is not window.tz:
        local_days = LocalDays(clock, window.tz)
    bucket: float | None = None  # the last row's 15-minute bucket
    bucket_day: str | None = None  # and its date, if it has one
    kinds, times, amounts = ledger.kinds, ledger.times, ledger.credits
    seconds_of, session_ids, internal = ledger.billable_seconds, ledger.session_ids, ledger.internal
    codes, attributions = ledger.attribution_codes, ledger.attributions.values
    for row in rows:
        at = times[row]
        kind = kinds[row]
        if not start <= at < end or kind not in _USAGE_KINDS:
            continue
        if at // _DAY_BUCKET != bucket:
            bucket = at // _DAY_BUCKET
            bucket_day = local_days.of_bucket(bucket)
        day = bucket_day if bucket_day is not None else local_days.date(at)
        code = codes[row]
        session_id = session_ids[row]
        charge = False
        if session_id is not None and kind == _CHARGE:
            sessions.add(session_id)
            charge = True
        key = (code, internal[row], charge, day)
        group = groups.get(key)
        if group is None:
            groups[key] = [amounts[row], seconds_of[row]]
        else:
            group[0] += amounts[row]
            group[1] += seconds_of[row]
        embed_id = attributions[code][_EMBED]
        if embed_id is not None:
            embeds.setdefault(embed_id, []).append(row)
        if kind == _SETTLEMENT:
            settled.append(row)
    billable_seconds = 0
    credits_charged = 0
    by_surface: dict[str, int] = {}
    by_model: dict[str, int] = {}
    by_quality: dict[str, int] = {}
    by_mode: dict[str, int] = dict.fromkeys(SPEECH_BILLING_MODES, 0)
    by_operation: dict[str, int] = {}
    daily: defaultdict[str, dict[str, int]] = defaultdict(dict)
    for (code, is_internal, charge, day), (credits, seconds) in groups.items():
        model, surface, quality, mode, _embed, _avatar, operation, _version, _note = attributions[
            code
        ]
        credits_charged += credits
        surface = surface or "unknown"
        _add(by_surface, surface, credits)
        if model is not None and not is_internal:
            _add(by_model, model, credits)
        if mode is not None:
            _add(by_mode, mode, credits)
        if operation is not None:
            _add(by_operation, operation, credits)
        _add(daily[day], surface, credits)
        if charge:
            billable_seconds += seconds
            if quality is not None and seconds:
                _add(by_quality, quality, seconds)
    return {
        "billable_seconds": billable_seconds,
        "sessions": len(sessions),
        "credits_charged": credits_charged,
        "period_start": clock.timestamp(window.start),
        "period_end": clock.timestamp(window.end),
        "by_billing_surface": _sorted(by_surface),
        "by_model": _sorted(by_model),
        "by_quality": _sorted(by_quality),
        "by_speech_billing_mode": by_mode,
        "daily_credits_by_billing_surface": {day: _sorted(daily[day]) for day in sorted(daily)},
        "embed_usage": _embed_usage(ledger, embeds, clock),
        "credits_by_operation": _sorted(by_operation),
        "recent_settled_charges": _recent(ledger, settled, clock, config.recent_charges_listed),
    }


def _embed_usage(
    ledger: Ledger, embeds: dict[str, list[int]], clock: Clock
) -> list[dict[str, Any]]:
    rows: list[tuple[int, float, str, dict[str, Any]]] = []
    times = ledger.times
    for embed_id, rows_of_embed in embeds.items():
        last = max(rows_of_embed, key=lambda r: (times[r], r))
        credits = sum(ledger.credits[r] for r in rows_of_embed)
        rows.append(
            (
                credits,
                times[last],
                embed_id,
                {
                    "embed_id": embed_id,
                    "avatar_id": ledger.attribution(last)[_AVATAR],
                    "credits": credits,
                    "billable_seconds": sum(ledger.billable_seconds[r] for r in rows_of_embed),
                    "last_used_at": clock.timestamp(times[last]),
                },
            )
        )
    # credits descending, then most recent use first, then id for a total order
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return [r[3] for r in rows]


def _recent(ledger: Ledger, settled: list[int], clock: Clock, limit: int) -> dict[str, Any]:
    times = ledger.times
    newest = sorted(settled, key=lambda r: (times[r], r), reverse=True)

    def render(rows: list[int]) -> list[dict[str, Any]]:
        return [
            {
                "credits": ledger.credits[r],
                "settled_at": clock.timestamp(times[r]),
                "run_id": ledger.run_ids[r],
                "model": ledger.attribution(r)[_MODEL],
            }
            for r in rows[:limit]
        ]

    studio = [r for r in newest if ledger.attribution(r)[_SURFACE] == STUDIO_SURFACE]
    others = [r for r in newest if ledger.attribution(r)[_SURFACE] != STUDIO_SURFACE]
    return {"model": render(others), "studio": render(studio)}
