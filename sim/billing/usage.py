"""The usage summary: a window of one organization's usage rendered as the seed's resource.

Why two steps: ``parse_window`` turns the query (``period`` or the explicit pair, and the
timezone; GAP-USAGE-2) into a ``UsageWindow`` or refuses it with ``Unprocessable``, and
``summarize`` renders that window from the organization's usage rollup
(``sim.billing.rollups``): each group of rows that the summary does not tell apart gives its sums
over the window, and over each local day of it, by bisection, so a summary costs what its
groups and days cost, not what the organization's rows in the window cost.

Counting rules (GAP-USAGE-1, GAP-USAGE-3): usage is the ``charge`` and ``settlement`` rows, dated
when they settle. ``billable_seconds``/``by_quality`` sum the seconds carried by session charges
(each session's seconds are carried by one row only). ``by_model`` leaves out rows without a
model and rows of internal models. Daily buckets use the local calendar date of each row in the
requested IANA timezone, so a day may hold 23 or 25 hours of charges.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sim.billing.ledger import Ledger
from sim.billing.periods import Month
from sim.billing.rollups import Group, GroupKey, Sums
from sim.billing.rules import ATTRIBUTION, ENTRY_KINDS
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


_SETTLEMENT = ENTRY_KINDS.index("settlement")
_MODEL, _SURFACE, _EMBED, _AVATAR = (
    ATTRIBUTION.index(f) for f in ("model", "billing_surface", "embed_id", "avatar_id")
)
_DAY_BUCKET = 900.0  # seconds: local midnight of every current timezone falls on one
_BUCKETS_KEPT = 1 << 16  # about 680 days of buckets per timezone


class LocalDays:
    """The local dates of simulated instants in one timezone, kept per 15-minute bucket.

    A bucket whose two ends fall on different local dates has no date of its own (``None``):
    its instants are dated one by one, so the dates are exact whatever the zone's offsets. A
    bucket's date depends on nothing but the zone, so ``Billing`` keeps one of these per zone
    for every summary: the organizations of a run read the same buckets, and a conversion costs
    far more than a lookup (bounded: the buckets are forgotten past ``_BUCKETS_KEPT``).
    """

    __slots__ = ("_buckets", "_clock", "_segments", "tz")

    def __init__(self, clock: Clock, tz: ZoneInfo) -> None:
        self._clock = clock
        self.tz = tz
        self._buckets: dict[float, str | None] = {}
        self._segments: tuple[float, float, list[tuple[float, str | None]]] | None = None

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

    def segments(self, start: float, end: float) -> list[tuple[float, str | None]]:
        """``[start, end)`` cut where the local date changes: each segment's first instant and
        its date (``None``: a bucket whose instants are dated one by one); a segment ends where
        the next begins, the last at ``end``. The last answer is kept (a served simulator is
        asked the same month again and again).

        From one bucket the next date change is looked for at the next local midnight (the
        zone's date never goes back), and found bucket by bucket where that guess fails."""
        kept = self._segments
        if kept is not None and kept[0] == start and kept[1] == end:
            return kept[2]
        out: list[tuple[float, str | None]] = []
        bucket = start // _DAY_BUCKET
        while bucket * _DAY_BUCKET < end:
            day = self.of_bucket(bucket)
            at = max(bucket * _DAY_BUCKET, start)
            if day is None or not out or out[-1][1] != day:
                out.append((at, day))
            bucket = self._next_change(bucket, day)
        self._segments = (start, end, out)
        return out

    def _next_change(self, bucket: float, day: str | None) -> float:
        """The first bucket after ``bucket`` whose date may differ from ``day``."""
        if day is None:
            return bucket + 1
        following = datetime.combine(date.fromisoformat(day) + timedelta(days=1), time(0))
        midnight = self._clock.seconds_at(following.replace(tzinfo=self.tz).astimezone(UTC))
        candidate = midnight // _DAY_BUCKET
        if candidate > bucket + 1 and self.of_bucket(candidate - 1) == day:
            return candidate
        return bucket + 1


def summarize(
    ledger: Ledger,
    org_id: str,
    window: UsageWindow,
    clock: Clock,
    config: BillingConfig,
    local_days: LocalDays | None = None,
) -> dict[str, Any]:
    """The usage summary of ``org_id``'s rows dated inside ``window``; ``local_days``: the
    dates of the window's timezone, if kept by the caller.

    Each group of the organization's usage rollup with rows in the window (taken in the order
    of its first row there, so a slice's keys first appear in row order) adds its sums to the
    slices its attribution names; each billing surface's rows add their sums over each local
    day to the daily slice."""
    start, end = window.start, window.end
    if local_days is None or local_days.tz is not window.tz:
        local_days = LocalDays(clock, window.tz)
    rollup = ledger.usage(org_id)
    present: list[tuple[float, int, GroupKey, Group, int, int]] = []
    for key, group in rollup.groups.items():
        first, last = group.span(start, end)
        if first < last:
            present.append((group.times[first], group.rows[first], key, group, first, last))
    present.sort(key=lambda found: found[:2])
    segments = local_days.segments(start, end) if present else []
    attributions = ledger.rows.attributions.values
    billable_seconds = credits_charged = sessions = 0
    by_surface: dict[str, int] = {}
    by_model: dict[str, int] = {}
    by_quality: dict[str, int] = {}
    by_mode: dict[str, int] = dict.fromkeys(SPEECH_BILLING_MODES, 0)
    by_operation: dict[str, int] = {}
    daily: defaultdict[str, dict[str, int]] = defaultdict(dict)
    embeds: dict[str, list[Any]] = {}  # [credits, billable seconds, last (time, row)]
    settled: list[tuple[float, int]] = []
    for _at, _row, (code, internal, kind, charge), group, first, last in present:
        credits = group.cum_credits[last] - group.cum_credits[first]
        seconds = group.cum_seconds[last] - group.cum_seconds[first]
        model, surface, quality, mode, embed, _avatar, operation, _version, _note = attributions[
            code
        ]
        credits_charged += credits
        surface = surface or "unknown"
        _add(by_surface, surface, credits)
        if model is not None and not internal:
            _add(by_model, model, credits)
        if mode is not None:
            _add(by_mode, mode, credits)
        if operation is not None:
            _add(by_operation, operation, credits)
        if charge:
            billable_seconds += seconds
            sessions += group.cum_marks[last] - group.cum_marks[first]
            if quality is not None and seconds:
                _add(by_quality, quality, seconds)
        if embed is not None:
            used = (group.times[last - 1], group.rows[last - 1])
            totals = embeds.setdefault(embed, [0, 0, used])
            totals[0] += credits
            totals[1] += seconds
            totals[2] = max(totals[2], used)
        if kind == _SETTLEMENT:
            newest = range(max(first, last - config.recent_charges_listed), last)
            settled += [(group.times[i], group.rows[i]) for i in newest]
    for surface_of, sums in rollup.surfaces.items():  # the daily slice: by surface alone
        first, last = sums.span(start, end)
        if first < last:
            surface = surface_of or "unknown"
            for day, day_credits in _by_day(sums, first, last, segments, end, local_days):
                _add(daily[day], surface, day_credits)
    for session_id in rollup.spread:  # charged at more than one time: counted from its rows
        sessions += any(start <= t < end for t in ledger.charge_times(session_id, org_id))
    return {
        "billable_seconds": billable_seconds,
        "sessions": sessions,
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


def _by_day(
    group: Sums,
    first: int,
    last: int,
    segments: list[tuple[float, str | None]],
    end: float,
    local_days: LocalDays,
) -> list[tuple[str, int]]:
    """The credits of the rows ``[first, last)`` of ``group`` by local date: by bisection at each
    segment's bounds, or row by row where that is fewer steps (and where a bucket's instants
    are dated one by one)."""
    times, cum = group.times, group.cum_credits
    out: list[tuple[str, int]] = []
    if last - first <= len(segments):
        starts = [segment[0] for segment in segments]
        for index in range(first, last):
            at = times[index]
            day = segments[bisect_right(starts, at) - 1][1]
            out.append((day or local_days.date(at), cum[index + 1] - cum[index]))
        return out
    bounds = [*(segment[0] for segment in segments), end]
    low = first
    for number, (_from, day) in enumerate(segments):
        high = bisect_left(times, bounds[number + 1], low, last)
        if day is not None and high > low:
            out.append((day, cum[high] - cum[low]))
        elif high > low:
            out += [(local_days.date(times[i]), cum[i + 1] - cum[i]) for i in range(low, high)]
        low = high
    return out


def _embed_usage(
    ledger: Ledger, embeds: dict[str, list[Any]], clock: Clock
) -> list[dict[str, Any]]:
    rows: list[tuple[int, float, str, dict[str, Any]]] = []
    for embed_id, (credits, seconds, (at, last)) in embeds.items():
        rows.append(
            (
                credits,
                at,
                embed_id,
                {
                    "embed_id": embed_id,
                    "avatar_id": ledger.attribution(last)[_AVATAR],
                    "credits": credits,
                    "billable_seconds": seconds,
                    "last_used_at": clock.timestamp(at),
                },
            )
        )
    # credits descending, then most recent use first, then id for a total order
    rows.sort(key=lambda r: (-r[0], -r[1], r[2]))
    return [r[3] for r in rows]


def _recent(
    ledger: Ledger, settled: list[tuple[float, int]], clock: Clock, limit: int
) -> dict[str, Any]:
    newest = [row for _at, row in sorted(settled, reverse=True)]
    credits, run_ids = ledger.rows.credits, ledger.rows.run_ids

    def render(rows: list[int]) -> list[dict[str, Any]]:
        return [
            {
                "credits": credits[r],
                "settled_at": clock.timestamp(ledger.rows.times[r]),
                "run_id": run_ids[r],
                "model": ledger.attribution(r)[_MODEL],
            }
            for r in rows[:limit]
        ]

    studio = [r for r in newest if ledger.attribution(r)[_SURFACE] == STUDIO_SURFACE]
    others = [r for r in newest if ledger.attribution(r)[_SURFACE] != STUDIO_SURFACE]
    return {"model": render(others), "studio": render(studio)}
