"""The ledger itself: immutable rows that obey their kind, and the org/time index (SIM-5)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.billing import ENTRY_KINDS, KIND_RULES, Ledger, LedgerEntry
from sim.billing.rules import attribute, split_debit
from sim.billing.storage import LedgerRows
from sim.kernel import Kernel


def _ledger() -> Ledger:
    return Ledger(Kernel.create().ids)


@pytest.mark.req("SIM-5")
def test_every_kind_of_the_issue_is_declared_with_a_rule() -> None:
    assert set(ENTRY_KINDS) == {
        "grant",
        "charge",
        "reservation",
        "settlement",
        "release",
        "refund",
        "rollover",
        "expiry",
    }
    assert set(KIND_RULES) == set(ENTRY_KINDS)
    usage_kinds = {k for k, rule in KIND_RULES.items() if rule.usage}
    assert usage_kinds == {"charge", "settlement"}


@pytest.mark.req("SIM-5")
def test_entries_are_immutable() -> None:
    entry = _ledger().record("grant", "org_a", 0.0, 10, granted_delta=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.credits = 5  # type: ignore[misc]


@pytest.mark.req("SIM-5")
@pytest.mark.parametrize(
    ("kind", "credits", "deltas"),
    [
        ("grant", 10, (0, 0, 5)),  # a credit must add exactly its amount
        ("grant", 10, (0, 15, -5)),  # and only add
        ("charge", 10, (0, 0, 5)),  # a debit never adds
        ("charge", 10, (0, -11, 0)),  # nor takes more than its amount
        ("rollover", 10, (10, 0, 0)),  # a transfer is net zero
        ("reservation", 10, (0, -10, 0)),  # holds never touch the pools
        ("release", 10, (0, 0, 10)),
        ("charge", -1, (0, 0, 0)),  # amounts are non-negative
    ],
)
def test_rows_that_break_their_kind_are_refused(
    kind: str, credits: int, deltas: tuple[int, int, int]
) -> None:
    with pytest.raises(ValueError, match=r"."):
        LedgerEntry(
            id="le_x",
            seq=0,
            kind=kind,
            org_id="org_a",
            at=0.0,  # type: ignore[arg-type]
            credits=credits,
            rollover_delta=deltas[0],
            included_delta=deltas[1],
            granted_delta=deltas[2],
        )


@pytest.mark.req("SIM-5")
def test_credits_must_be_integers() -> None:
    with pytest.raises(TypeError):
        LedgerEntry(id="le_x", seq=0, kind="grant", org_id="o", at=0.0, credits=1.5)  # type: ignore[arg-type]


@pytest.mark.req("SIM-5")
def test_debit_overage_is_what_the_pools_did_not_cover() -> None:
    entry = _ledger().record("charge", "org_a", 0.0, 100, rollover_delta=-30, granted_delta=-50)
    assert entry.overage == 20
    assert entry.as_record()["overage"] == 20


@pytest.mark.req("SIM-5", "RES-USAGE-1")
def test_window_is_inclusive_start_exclusive_end() -> None:
    ledger = _ledger()
    for at in (9.0, 10.0, 15.0, 20.0, 21.0):
        ledger.record("grant", "org_a", at, 1, granted_delta=1)
    ledger.record("grant", "org_b", 12.0, 1, granted_delta=1)
    assert [e.at for e in ledger.window("org_a", 10.0, 20.0)] == [10.0, 15.0]
    assert ledger.window("org_unknown", 0.0, 100.0) == ()


@pytest.mark.req("SIM-5")
@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["o1", "o2", "o3"]), st.integers(0, 50)), max_size=60),
    bounds=st.tuples(st.integers(0, 55), st.integers(0, 55)),
)
def test_index_window_equals_a_full_scan(
    rows: list[tuple[str, int]], bounds: tuple[int, int]
) -> None:
    """Rows may arrive out of time order (a charge dated at a session's end); the index copes."""
    ledger = _ledger()
    for org, at in rows:
        ledger.record("grant", org, float(at), 1, granted_delta=1)
    start, end = min(bounds), max(bounds)
    for org in ("o1", "o2", "o3"):
        scanned = sorted(
            (e for e in ledger if e.org_id == org and start <= e.at < end),
            key=lambda e: (e.at, e.seq),
        )
        assert list(ledger.window(org, float(start), float(end))) == scanned
        assert list(ledger.appended(org)) == [e for e in ledger if e.org_id == org]


def _pools(ledger: Ledger, org: str, pools: tuple[int, int, int], held: int) -> None:
    rollover, included, granted = pools
    ledger.append("grant", org, 0.0, included + rollover, included_delta=included + rollover)
    if rollover:
        ledger.append(
            "rollover", org, 0.0, rollover, included_delta=-rollover, rollover_delta=rollover
        )
    ledger.append("grant", org, 0.0, granted, granted_delta=granted)
    if held:
        ledger.append("reservation", org, 0.0, held, run_id="run_1")


@pytest.mark.req("SIM-5")
@settings(max_examples=80, deadline=None)
@given(
    pools=st.tuples(st.integers(0, 500), st.integers(0, 500), st.integers(0, 500)),
    held=st.integers(0, 600),
    seconds=st.integers(1, 200),
    rates=st.lists(st.tuples(st.integers(0, 9), st.booleans()), min_size=1, max_size=3),
    at=st.sampled_from([0.0, 5.5]),
)
def test_charge_session_writes_the_rows_append_writes_from_split_debit(
    pools: tuple[int, int, int],
    held: int,
    seconds: int,
    rates: list[tuple[int, bool]],
    at: float,
) -> None:
    """The one-call session charge against the general path: each line's deltas from
    ``split_debit`` of the running totals (not counting what runs hold), then ``append``."""
    tariff = [
        (rate, internal, index == 0, attribute(operation=f"op{index}", quality="standard"))
        for index, (rate, internal) in enumerate(rates)
    ]
    fast, general = _ledger(), _ledger()  # same seed: the same ids
    for ledger in (fast, general):
        _pools(ledger, "org_a", pools, held)
    before, after = fast.charge_session("org_a", at, "sess_1", seconds, tariff)
    expected_before = sum(general.totals("org_a")[:3])
    for rate, internal, carries, attribution in tariff:
        rollover, included, granted, holds = general.totals("org_a")
        deltas = split_debit(
            (rollover, included, granted),
            seconds * rate,
            coverable=rollover + included + granted - holds,
        )
        general.append(
            "charge",
            "org_a",
            at,
            seconds * rate,
            rollover_delta=deltas[0],
            included_delta=deltas[1],
            granted_delta=deltas[2],
            session_id="sess_1",
            internal=internal,
            billable_seconds=seconds if carries else 0,
            attribution=attribution,
        )
    assert list(fast) == list(general)
    for name in LedgerRows.COLUMNS:  # column for column, the ids' halves included
        assert list(getattr(fast.rows, name)) == list(getattr(general.rows, name)), name
    assert fast.totals("org_a") == general.totals("org_a")
    assert (before, after) == (expected_before, sum(general.totals("org_a")[:3]))
    assert fast.session_rows("sess_1") == general.session_rows("sess_1")
    assert list(fast.window("org_a", 0.0, 10.0)) == list(general.window("org_a", 0.0, 10.0))
