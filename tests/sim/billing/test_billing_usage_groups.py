"""The usage summary reads rollups of rows; it must render what a row-by-row pass renders.

``summarize`` reads the organization's usage rollup: groups of rows (attribution, internal,
kind, session charge) with running sums, summed over the window and over each local day by
bisection, with local dates kept per 15-minute bucket and shared between summaries of the same
timezone (``LocalDays``). The reference below is the plain pass over the window's rows: every
row added to every slice it belongs to, its local date converted on its own. The two must give
the same bytes (the JSON text, key order included: a slice's keys appear in the order of their
first row) for any ledger, rows appended in any order, any window and any timezone, whenever
the summaries are asked (the rollup is folded as they ask).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.billing.ledger import Ledger
from sim.billing.rules import ENTRY_KINDS, KIND_RULES, attribute
from sim.billing.usage import (
    SPEECH_BILLING_MODES,
    STUDIO_SURFACE,
    LocalDays,
    UsageWindow,
    parse_window,
    summarize,
)
from sim.clock import Clock
from sim.config import BillingConfig
from sim.ports import SessionUsage

ZONES = ("UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu")
_USAGE = {kind for kind in ENTRY_KINDS if KIND_RULES[kind].usage}


def _add(totals: dict[str, int], key: str, amount: int) -> None:
    totals[key] = totals.get(key, 0) + amount


def _sorted(totals: dict[str, int]) -> dict[str, int]:
    return dict(sorted(totals.items()))


def _row_by_row(
    ledger: Ledger, rows: Sequence[int], window: UsageWindow, clock: Clock, config: BillingConfig
) -> dict[str, Any]:
    """The summary as one pass adding every row to every slice it belongs to."""
    billable_seconds = credits_charged = 0
    sessions: set[str] = set()
    by_surface: dict[str, int] = {}
    by_model: dict[str, int] = {}
    by_quality: dict[str, int] = {}
    by_mode: dict[str, int] = dict.fromkeys(SPEECH_BILLING_MODES, 0)
    by_operation: dict[str, int] = {}
    daily: defaultdict[str, dict[str, int]] = defaultdict(dict)
    embeds: dict[str, list[int]] = {}
    settled: list[int] = []
    for row in rows:
        entry = ledger.entry(row)
        if not window.start <= entry.at < window.end or entry.kind not in _USAGE:
            continue
        credits = entry.credits
        credits_charged += credits
        surface = entry.billing_surface or "unknown"
        _add(by_surface, surface, credits)
        if entry.model is not None and not entry.internal:
            _add(by_model, entry.model, credits)
        if entry.speech_billing_mode is not None:
            _add(by_mode, entry.speech_billing_mode, credits)
        if entry.operation is not None:
            _add(by_operation, entry.operation, credits)
        day = clock.datetime_at(entry.at).astimezone(window.tz).date().isoformat()
        _add(daily[day], surface, credits)
        if entry.kind == "charge" and entry.session_id is not None:
            sessions.add(entry.session_id)
            billable_seconds += entry.billable_seconds
            if entry.quality is not None and entry.billable_seconds:
                _add(by_quality, entry.quality, entry.billable_seconds)
        if entry.embed_id is not None:
            embeds.setdefault(entry.embed_id, []).append(row)
        if entry.kind == "settlement":
            settled.append(row)
    embed_usage = []
    for embed_id, of_embed in embeds.items():
        last = max(of_embed, key=lambda r: (ledger.entry(r).at, r))
        total = sum(ledger.entry(r).credits for r in of_embed)
        body = {
            "embed_id": embed_id,
            "avatar_id": ledger.entry(last).avatar_id,
            "credits": total,
            "billable_seconds": sum(ledger.entry(r).billable_seconds for r in of_embed),
            "last_used_at": clock.timestamp(ledger.entry(last).at),
        }
        embed_usage.append((-total, -ledger.entry(last).at, embed_id, body))
    embed_usage.sort(key=lambda r: r[:3])
    newest = sorted(settled, key=lambda r: (ledger.entry(r).at, r), reverse=True)
    limit = config.recent_charges_listed

    def recent(studio: bool) -> list[dict[str, Any]]:
        chosen = [
            r for r in newest if (ledger.entry(r).billing_surface == STUDIO_SURFACE) == studio
        ]
        return [
            {
                "credits": ledger.entry(r).credits,
                "settled_at": clock.timestamp(ledger.entry(r).at),
                "run_id": ledger.entry(r).run_id,
                "model": ledger.entry(r).model,
            }
            for r in chosen[:limit]
        ]

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
        "daily_credits_by_billing_surface": {d: _sorted(daily[d]) for d in sorted(daily)},
        "embed_usage": [r[3] for r in embed_usage],
        "credits_by_operation": _sorted(by_operation),
        "recent_settled_charges": {"model": recent(False), "studio": recent(True)},
    }


def _maybe(values: tuple[str, ...]) -> st.SearchStrategy[str | None]:
    return st.none() | st.sampled_from(values)


rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(("charge", "settlement", "reservation", "release", "grant")),
            "org": st.sampled_from(("org_a", "org_b")),
            "at": st.integers(0, 6 * 86_400 * 4).map(lambda q: q / 4),  # quarter seconds
            "credits": st.integers(0, 500),
            "session": _maybe(("s1", "s2", "s3", "s4")),
            "run": _maybe(("r1", "r2")),
            "internal": st.booleans(),
            "seconds": st.integers(0, 300),
            "model": _maybe(("sim/speech", "sim/other")),
            "surface": _maybe(("api", "embed", STUDIO_SURFACE)),
            "quality": _maybe(("lite", "pro")),
            # an unknown mode comes after the two known ones, where it first appears
            "mode": _maybe((*SPEECH_BILLING_MODES, "z_mode", "a_mode")),
            "embed": _maybe(("emb_1", "emb_2")),
            "avatar": _maybe(("av_1", "av_2")),
            "operation": _maybe(("session.realtime", "run.x")),
        }
    ),
    max_size=60,
)


def _ledger(rows: list[dict[str, Any]], ledger: Ledger | None = None) -> Ledger:
    """A ledger of ``rows`` (appended to ``ledger``, after the rows it has, if given)."""
    from sim.kernel import Kernel

    ledger = ledger or Ledger(Kernel.create().ids)
    for r in rows[len(ledger) :]:
        kind = r["kind"]
        ledger.append(
            kind,
            r["org"],
            r["at"],
            r["credits"],
            granted_delta=r["credits"] if kind == "grant" else 0,
            session_id=r["session"],
            run_id=r["run"],
            internal=r["internal"],
            billable_seconds=r["seconds"],
            attribution=attribute(
                model=r["model"],
                billing_surface=r["surface"],
                quality=r["quality"],
                speech_billing_mode=r["mode"],
                embed_id=r["embed"],
                avatar_id=r["avatar"],
                operation=r["operation"],
            ),
        )
    return ledger


@pytest.mark.req("RES-USAGE-1", "RES-USAGE-2", "RES-USAGE-3")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=rows_strategy,
    windows=st.lists(
        st.tuples(st.integers(-86_400, 5 * 86_400), st.integers(1, 3 * 86_400)), min_size=1
    ),
    zones=st.lists(st.sampled_from(ZONES) | st.timezone_keys(), min_size=1, max_size=3),
    asked=st.integers(0, 60),
)
def test_grouped_summary_renders_the_row_by_row_bytes(
    rows: list[dict[str, Any]],
    windows: list[tuple[int, int]],
    zones: list[str],
    asked: int,
) -> None:
    from sim.kernel import Kernel

    kernel = Kernel.create()
    clock, config = kernel.clock, kernel.config.billing
    ledger = _ledger(rows[:asked])
    for org in ("org_a", "org_b"):  # a summary asked before the rest of the rows are written
        summarize(ledger, org, parse_window(clock, config), clock, config)
    ledger = _ledger(rows, ledger)
    kept: dict[str, LocalDays] = {}  # shared by every summary of a zone, as ``Billing`` does
    for zone in zones:
        for start, length in windows:
            window = parse_window(
                clock,
                config,
                period_start=clock.timestamp(float(start))[:19] + "Z",
                period_end=clock.timestamp(float(start + length))[:19] + "Z",
                timezone=zone,
            )
            days = kept.setdefault(zone, LocalDays(clock, window.tz))
            for org in ("org_a", "org_b"):
                in_window = list(ledger.window_rows(org, window.start, window.end))
                expected = _row_by_row(ledger, in_window, window, clock, config)
                for local_days in (days, None):
                    got = summarize(ledger, org, window, clock, config, local_days)
                    assert json.dumps(got) == json.dumps(expected)


@pytest.mark.req("RES-USAGE-2")
def test_a_timezones_dates_are_kept_once_for_every_organization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Billing.usage`` reuses one ``LocalDays`` per timezone: a second organization's summary
    of the same days converts no instant again."""
    from sim.accounts import AccountRegistry
    from sim.billing import Billing
    from sim.kernel import Kernel

    kernel = Kernel.create()
    accounts = AccountRegistry(kernel.config, kernel.clock, kernel.ids)
    billing = Billing(kernel, accounts)
    orgs = [accounts.create_organization(f"o{i}", "pro").id for i in range(2)]
    for org in orgs:
        billing.open_account(org, "pro")
    for hour in range(48):
        kernel.clock.advance(3_600)
        for org in orgs:
            usage = SessionUsage(
                f"s_{org}_{hour}", org, "lite", "api", 10, 250, kernel.clock.now, "av"
            )
            billing.charge_session(usage)
    calls: list[float] = []
    real = LocalDays.date

    def counted(self: LocalDays, seconds: float) -> str:
        calls.append(seconds)
        return real(self, seconds)

    monkeypatch.setattr(LocalDays, "date", counted)
    first = billing.usage(orgs[0], timezone="Europe/Berlin")
    converted = len(calls)
    second = billing.usage(orgs[1], timezone="Europe/Berlin")
    # The month's days found from each day's first bucket and the last one before the next
    # local midnight (both ends of each: four conversions a day), whatever the rows.
    assert 0 < converted <= 4 * 32
    assert len(calls) == converted  # the second organization's days were all kept
    assert first["daily_credits_by_billing_surface"] == second["daily_credits_by_billing_surface"]


@pytest.mark.req("RES-USAGE-1", "SIM-5")
@settings(max_examples=40, deadline=None)
@given(rows=rows_strategy, at=st.integers(0, 6 * 86_400 - 1), session=_maybe(("s1", "s9")))
def test_a_usage_row_taken_back_leaves_the_summary_as_it_was(
    rows: list[dict[str, Any]], at: int, session: str | None
) -> None:
    """A charge written, summarized (folded into the rollup) and taken back (``retract``):
    the next summary is the one before it, as the row-by-row pass says."""
    from sim.kernel import Kernel

    kernel = Kernel.create()
    clock, config = kernel.clock, kernel.config.billing
    ledger = _ledger(rows)
    window = parse_window(clock, config, period_start="2025-12-31T00:00:00Z",
                          period_end="2026-01-07T00:00:00Z", timezone="Europe/Berlin")  # fmt: skip
    before = summarize(ledger, "org_a", window, clock, config)
    row = ledger.append("charge", "org_a", float(at), 7, session_id=session, billable_seconds=3,
                        attribution=attribute(billing_surface="api", quality="pro"))  # fmt: skip
    with_row = summarize(ledger, "org_a", window, clock, config)
    assert with_row["credits_charged"] == before["credits_charged"] + 7
    ledger.retract(row)
    after = summarize(ledger, "org_a", window, clock, config)
    in_window = list(ledger.window_rows("org_a", window.start, window.end))
    assert json.dumps(after) == json.dumps(before)
    assert json.dumps(after) == json.dumps(_row_by_row(ledger, in_window, window, clock, config))
