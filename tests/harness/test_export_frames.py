"""A store's export (``sim.columns.Table``) becomes a data frame, one converter per kind (NB-2).

Every kind reads its values as the domain declares them: times and ids with the clock's and the
ids' own arithmetic, categories as pandas categoricals whose categories are the values present,
sorted, and a mapping or a function of values as the column they stand for.
"""

from __future__ import annotations

import random
from array import array
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from harness.runner.columns import relabel, to_frame
from sim.clock import Clock
from sim.columns import Column, Table
from sim.ids import format_id

CLOCK = Clock(datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.req("NB-2", "PERF-2")
def test_each_kind_reads_as_declared() -> None:
    rng = random.Random(4)
    bits = [rng.getrandbits(80) for _ in range(3)]
    at = array("d", [0.0, 1.5, 86_400.25])
    table = Table(
        3,
        {
            "status": Column("category", array("B", [2, 1, 2]), labels=["b", None, "a"]),
            "outcome": Column("category", ["ok", None, "at_capacity"]),
            "reason": Column("category", {2: "idle_timeout"}),
            "id": Column("text", ["x", None, "z"]),
            "note": Column("text", lambda: {1: "late"}),
            "at": Column("time", array("d", [0.0, float("nan"), 2.5])),
            "ratio": Column("float", {0: 0.5}),
            "count": Column("int", array("Q", [1, 2, 3])),
            "seconds": Column("int", array("Q", [1, 0, 3]), missing=[1]),
            "flag": Column("bool", array("B", [1, 0, 1])),
            "event_id": Column(
                "timed_id",
                at,
                prefix="evt_",
                high=[b >> 64 for b in bits],
                low=[b & (2**64 - 1) for b in bits],
            ),
            "ledger_id": Column("id", [1, 2, 3], prefix="le_", low=[4, 5, 6]),
        },
    )
    frame = to_frame(table, CLOCK)
    assert list(frame.columns) == list(table.columns)
    assert frame["status"].tolist()[::2] == ["a", "a"] and frame["status"].isna()[1]
    assert list(frame["status"].cat.categories) == ["a"]  # the values present, sorted
    assert list(frame["outcome"].cat.categories) == ["at_capacity", "ok"]
    assert frame["outcome"].isna().tolist() == [False, True, False]
    assert frame["reason"].astype(object).tolist()[2] == "idle_timeout"
    assert frame["reason"].isna().tolist() == [True, True, False]
    assert frame["id"].dtype == "str" and frame["id"].isna().tolist() == [False, True, False]
    assert frame["note"].isna().tolist() == [True, False, True]
    assert frame["at"].dtype == "datetime64[us, UTC]" and frame["at"].isna().sum() == 1
    assert frame["at"][2] == pd.Timestamp("2026-01-01T00:00:02.5Z")
    assert np.isnan(frame["ratio"][1]) and frame["ratio"][0] == 0.5
    assert frame["count"].dtype == "int64"
    assert frame["seconds"].dtype == "Int64" and frame["seconds"].isna().tolist() == [
        False,
        True,
        False,
    ]
    assert frame["flag"].tolist() == [True, False, True]
    assert list(frame["event_id"]) == [
        format_id("event", CLOCK.epoch_ms(t), b) for t, b in zip(at, bits, strict=True)
    ]
    assert list(frame["ledger_id"]) == [
        "le_" + format_id("event", (h << 64 | low) >> 80, (h << 64 | low) & (2**80 - 1))[4:]
        for h, low in ((1, 4), (2, 5), (3, 6))
    ]


@pytest.mark.req("NB-2")
def test_an_empty_frame_has_every_column_and_reads_no_values() -> None:
    def refuse() -> list[str]:
        raise AssertionError("an empty frame reads no values")

    table = Table(2, {"a": Column("text", refuse), "b": Column("category", ["x", "y"])})
    frame = to_frame(table, CLOCK, empty=True)
    assert list(frame.columns) == ["a", "b"] and len(frame) == 0
    assert isinstance(frame["b"].dtype, pd.CategoricalDtype)


@pytest.mark.req("NB-2")
def test_relabelled_categories_are_sorted_again() -> None:
    codes = pd.Series(pd.Categorical(["org_b", None, "org_a", "org_b"]))
    named = relabel(codes, ["Zeta", "Alpha"])  # org_a is Zeta, org_b is Alpha
    assert list(named.cat.categories) == ["Alpha", "Zeta"]
    assert named.isna().tolist() == [False, True, False, False]
    assert named.dropna().tolist() == ["Alpha", "Zeta", "Alpha"]
