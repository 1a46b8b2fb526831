"""The ledger's storage: typed columns holding the values written, in append order, one id per
row; ``retract`` leaves every column and index as before the newest row, ``release`` empties it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.billing.ledger import Ledger
from sim.billing.rules import ENTRY_KINDS, attribute
from sim.billing.storage import LedgerRows
from sim.kernel import Kernel

_ORGS = ("org_a", "org_b", "org_c")

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("charge"),
            st.sampled_from(_ORGS),
            st.integers(0, 40).map(float),
            st.integers(0, 300),
            st.lists(st.tuples(st.integers(0, 9), st.booleans()), min_size=1, max_size=3),
        ),
        st.tuples(
            st.just("grant"),
            st.sampled_from(_ORGS),
            st.integers(0, 40).map(float),
            st.integers(0, 5_000),
        ),
        st.tuples(
            st.just("reservation"),
            st.sampled_from(_ORGS),
            st.integers(0, 40).map(float),
            st.integers(0, 50),
        ),
    ),
    max_size=80,
)


def _expected_columns(ledger: Ledger) -> dict[str, list[Any]]:
    """Every column as a list."""
    columns: dict[str, list[Any]] = {}
    for name in LedgerRows.COLUMNS:
        columns[name] = list(getattr(ledger.rows, name))
    return columns


def _play(ops: list[tuple[Any, ...]]) -> Ledger:
    kernel = Kernel.create()  # the same seed every time: the same ids
    ledger = Ledger(kernel.ids)
    for index, op in enumerate(ops):
        kernel.clock.advance(1.0)  # each operation at its own instant (ids are dated)
        if op[0] == "charge":
            _, org, at, seconds, lines = op
            tariff = [
                (rate, internal, i == 0, attribute(operation=f"op{i}", quality="lite"))
                for i, (rate, internal) in enumerate(lines)
            ]
            ledger.charge_session(org, at, f"sess_{index}", seconds, tariff)
        elif op[0] == "grant":
            _, org, at, credits = op
            ledger.append("grant", org, at, credits, granted_delta=credits)
        elif op[0] == "reservation":
            _, org, at, credits = op
            ledger.append("reservation", org, at, credits, run_id=f"run_{index}")
    return ledger


@pytest.mark.req("SIM-5")
@settings(max_examples=60, deadline=None)
@given(ops=ops)
def test_columns_hold_the_values_written_in_append_order(ops: list[tuple[Any, ...]]) -> None:
    """An independent account of what each operation wrote, against the columns."""
    ledger = _play(ops)
    kinds: list[str] = []
    orgs: list[str] = []
    times: list[float] = []
    credits: list[int] = []
    sessions: list[str | None] = []
    runs: list[str | None] = []
    internal: list[int] = []
    seconds: list[int] = []
    for index, op in enumerate(ops):
        if op[0] == "charge":
            _, org, at, billable, lines = op
            for i, (rate, is_internal) in enumerate(lines):
                internal.append(int(is_internal))
                kinds.append("charge")
                orgs.append(org)
                times.append(at)
                credits.append(billable * rate)
                sessions.append(f"sess_{index}")
                runs.append(None)
                seconds.append(billable if i == 0 else 0)
        elif op[0] in ("grant", "reservation"):
            _, org, at, amount = op
            kinds.append(op[0])
            internal.append(0)
            orgs.append(org)
            times.append(at)
            credits.append(amount)
            sessions.append(None)
            runs.append(f"run_{index}" if op[0] == "reservation" else None)
            seconds.append(0)
    assert [ENTRY_KINDS[k] for k in ledger.rows.kinds] == kinds
    assert [ledger.rows.orgs[code] for code in ledger.rows.org_codes] == orgs
    assert list(ledger.rows.times) == times
    assert list(ledger.rows.credits) == credits
    assert ledger.rows.session_ids == sessions
    assert ledger.rows.run_ids == runs
    assert list(ledger.rows.billable_seconds) == seconds
    assert list(ledger.rows.internal) == internal
    columns = _expected_columns(ledger)
    ids = set(zip(columns["id_high"], columns["id_low"], strict=True))
    assert len(ids) == len(ledger)  # one id per row


@pytest.mark.req("SIM-5")
def test_retract_removes_the_newest_row() -> None:
    ledger = Ledger(Kernel.create().ids)
    ledger.append("grant", "org_a", 0.0, 100, granted_delta=100)
    ledger.charge_session("org_a", 1.0, "sess_1", 10, [(2, False, True, attribute(quality="pro"))])
    before = (
        _expected_columns(ledger),
        ledger.totals("org_a"),
        list(ledger.window_rows("org_a", 0, 9)),
    )
    row = ledger.append(
        "reservation", "org_a", 2.0, 30, run_id="run_1", attribution=attribute(model="m")
    )
    assert ledger.totals("org_a")[3] == 30
    ledger.retract(row)
    assert len(ledger) == row
    after = (
        _expected_columns(ledger),
        ledger.totals("org_a"),
        list(ledger.window_rows("org_a", 0, 9)),
    )
    assert after == before
    assert ledger.run_rows("run_1") == ()
    assert len(ledger.rows.attributions) == 2  # the reservation's attribution is forgotten


@pytest.mark.req("SIM-5")
def test_release_drops_every_row() -> None:
    ledger = Ledger(Kernel.create().ids)
    for i in range(5):
        ledger.append("grant", "org_a", float(i), 1, granted_delta=1)
    ledger.release()
    assert len(ledger) == 0
    assert _expected_columns(ledger) == {name: [] for name in LedgerRows.COLUMNS}
    ledger.append("grant", "org_b", 0.0, 3, granted_delta=3)
    assert [e.org_id for e in ledger] == ["org_b"]
    assert ledger.entry(0).seq == 0
    with pytest.raises(IndexError):
        ledger.entry(1)


@pytest.mark.req("SIM-5")
def test_run_row_finds_a_runs_first_row_of_the_kinds_asked() -> None:
    ledger = Ledger(Kernel.create().ids)
    ledger.append("grant", "org_a", 0.0, 100, granted_delta=100)
    held = ledger.append(
        "reservation", "org_a", 1.0, 30, run_id="run_1", attribution=attribute(model="m")
    )
    assert ledger.run_row("run_1", "reservation") == held
    assert ledger.run_row("run_1", "settlement", "release") is None
    assert ledger.run_row("run_2", "reservation") is None
    released = ledger.append("release", "org_a", 2.0, 0, run_id="run_1")
    assert ledger.run_row("run_1", "settlement", "release") == released
    assert ledger.entry(held) == ledger.run_rows("run_1")[0]
