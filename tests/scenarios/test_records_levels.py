"""What a run keeps: the records levels, the aggregate tables and the tables built in bulk.

- ``records: full | sessions | summary`` changes what is kept, never what happens (PERF-3,
  SIM-2); a summary run keeps aggregates whose size does not depend on the traffic (PERF-3).
- Every table has the same columns and dtypes at every level; the aggregates agree with the
  per-row tables they summarize (NB-2).
- Tables built in bulk from columns equal the records read one by one (NB-2, PERF-2).
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from harness.runner import play, run_scenario, simulate
from harness.runner.columns import epoch_ms, lookup, strings, text_column, times, to_frame, ulids
from harness.runner.records import CallLog
from harness.runner.tables import AGGREGATES, TABLES, WAIT_EDGES, collect
from harness.scenarios import parse_scenario
from sim.clock import Clock
from sim.ids import format_ulid
from sim.platform import PlatformHandedOver
from tests.scenarios.helpers import small

LEVELS = ("full", "sessions", "summary")
_PER_ROW = ("sessions", "clients", "api_calls", "ledger")


def _scenario(records: str, **overrides: Any) -> Any:
    return parse_scenario(small(records=records, **overrides))


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return {level: run_scenario(_scenario(level)) for level in LEVELS}


@pytest.mark.req("PERF-3", "SIM-2", "NB-2")
def test_the_level_changes_what_is_kept_never_what_happens(results: dict[str, Any]) -> None:
    full, sessions, summary = (results[level] for level in LEVELS)
    for name in TABLES:  # the same columns and dtypes whatever is kept (categories: the values)
        shapes = {
            level: [(c, str(d)) for c, d in results[level].tables()[name].dtypes.items()]
            for level in LEVELS
        }
        assert shapes["full"] == shapes["sessions"] == shapes["summary"], name
    for name in (*AGGREGATES, "utilization", "runs", "usage", "usage_daily", "organizations"):
        for other in (sessions, summary):
            pd.testing.assert_frame_equal(full.tables()[name], other.tables()[name])
    for name in _PER_ROW:
        pd.testing.assert_frame_equal(full.tables()[name], sessions.tables()[name])
        assert len(full.tables()[name]) > 0 and len(summary.tables()[name]) == 0
    assert len(full.events) > 0 and len(sessions.events) == 0 and len(summary.events) == 0
    assert (full.records, sessions.records, summary.records) == LEVELS


@pytest.mark.req("NB-2", "SIM-3")
def test_the_aggregates_summarize_the_rows(results: dict[str, Any]) -> None:
    full = results["full"]
    sessions, intervals = full.sessions, full.intervals
    # Every column of ``intervals`` counts the sessions created in the interval.
    cohort = ((sessions["created_at"] - intervals["at"].iloc[0]).dt.total_seconds() // 60).astype(
        int
    )
    by = sessions.assign(cohort=cohort.to_numpy()).groupby("cohort")
    indexed = intervals.set_index("interval")
    assert (by.size() == indexed.loc[by.size().index, "sessions_created"]).all()
    assert intervals["sessions_created"].sum() == len(sessions)
    placed = sessions.dropna(subset=["started_at"])
    framed = sessions.dropna(subset=["first_frame_at"])
    assert intervals["sessions_placed"].sum() == len(placed)
    assert intervals["sessions_started"].sum() == len(framed)
    placement = placed["placement_wait_seconds"]
    assert intervals["placement_wait_seconds_sum"].sum() == pytest.approx(placement.sum())
    assert intervals["placement_wait_seconds_max"].max() == pytest.approx(placement.max())
    first_frame = framed["first_frame_wait_seconds"]
    assert intervals["first_frame_wait_seconds_sum"].sum() == pytest.approx(first_frame.sum())
    waits_by = by["placement_wait_seconds"].sum()
    assert indexed.loc[waits_by.index, "placement_wait_seconds_sum"].to_numpy() == pytest.approx(
        waits_by.to_numpy()
    )
    assert intervals["waited"].sum() == int((placement > 1e-9).sum())
    for status in ("ended", "failed", "canceled"):
        assert intervals[f"sessions_{status}"].sum() == int((sessions["status"] == status).sum())
    assert intervals["no_capacity"].sum() == int((sessions["error_code"] == "no_capacity").sum())
    finished = sessions.dropna(subset=["ended_at"])
    assert intervals["billable_seconds"].sum() == finished["billable_seconds"].sum()
    # The waits' histograms: every placed and every started session once, in its bin.
    waits = full.waits
    for kind, rows in (("placement", placed), ("first_frame", framed)):
        mine = waits[waits["kind"] == kind]
        assert mine["sessions"].sum() == len(rows)
        values = rows[f"{kind}_wait_seconds"].to_numpy()
        for (low, high), count in mine.groupby(["low", "high"])["sessions"].sum().items():
            inside = (values <= high) & ((values > low) if high > 0 else True)
            assert int(inside.sum()) == count, (kind, low, high)
    assert set(waits["high"]) <= set(WAIT_EDGES)
    calls = full.api_calls
    assert full.requests["requests"].sum() == len(calls)
    counted = full.requests.groupby(["operation", "outcome"])["requests"].sum()
    assert counted.to_dict() == calls.groupby(["operation", "outcome"]).size().to_dict()
    assert full.arrivals["clients"].sum() == len(full.clients)
    assert full.arrivals["attempts"].sum() == full.clients["attempts"].sum()
    ledger = full.ledger
    daily = full.ledger_daily
    assert daily["rows"].sum() == len(ledger)
    assert (
        daily.groupby("organization")["credits"].sum().to_dict()
        == ledger.groupby("organization")["credits"].sum().to_dict()
    )
    by_day = ledger.assign(day=ledger["at"].dt.strftime("%Y-%m-%d"))
    assert sorted(daily["day"].unique()) == sorted(by_day["day"].unique())


@pytest.mark.req("PERF-3")
def test_a_summary_run_keeps_nothing_that_grows_with_traffic() -> None:
    """Three times the arrivals over the same hours: the same number of aggregate rows (up to
    the categories that appear), and no per-row record anywhere."""
    sizes = []
    for rate in (60, 180):
        scenario = _scenario(
            "summary",
            duration="2h",
            arrivals=[{"kind": "poisson", "rate_per_hour": rate}],
            config={"scheduler": {"workers": 12}},
            organizations=[{"name": "Acme", "plan": "enterprise", "keys": 20, "concurrency": 20}],
        )
        live = play(scenario)
        platform = live.platform
        assert len(platform.kernel.events) == 0
        assert len(platform.api_log) == 0
        assert platform.sessions._history.keep is False and len(platform.sessions._history) == 0
        assert live.pool.calls is None and live.pool.clients is None
        result = collect(live.records())
        sizes.append({name: len(result.tables()[name]) for name in ("intervals", "utilization")})
        assert sum(result.arrivals["clients"]) > rate  # the traffic was really there
        per_interval = result.requests.groupby("interval").size()
        assert per_interval.max() <= 3 * 4  # operations x outcomes x first attempt, bounded
    assert sizes[0] == sizes[1]


@pytest.mark.req("PERF-3")
def test_the_wait_histograms_are_bounded_by_the_intervals_and_bins_not_the_traffic() -> None:
    """The ``waits`` table keeps a row per interval, wait kind and bin that holds a wait: with
    far more sessions than that bound, it stays within it (a table of one row per session
    would not)."""
    scenario = _scenario(
        "summary",
        duration="1h",
        cooldown="5m",
        sample_every="1h",
        arrivals=[{"kind": "poisson", "rate_per_hour": 3000}],
        runs=[],
        limits={"concurrency": "off", "rate": "off"},
        config={"scheduler": {"workers": 400, "worker_boot": {"kind": "constant", "value": 1}}},
        organizations=[{"name": "Acme", "plan": "enterprise"}],
    )
    result = run_scenario(scenario)
    created = int(result.intervals["sessions_created"].sum())
    assert created > 2500
    bound = len(result.intervals) * 2 * len(WAIT_EDGES)
    assert len(result.waits) <= bound < created
    counted = result.intervals[["sessions_placed", "sessions_started"]].to_numpy().sum()
    assert result.waits["sessions"].sum() == counted


@pytest.mark.req("NB-2", "PERF-2")
def test_tables_built_in_bulk_are_the_records_read_one_by_one() -> None:
    live = play(_scenario("full"))
    result = collect(live.records())
    platform = live.platform
    events = list(platform.kernel.events)
    assert list(result.events["event_id"]) == [e.id for e in events]
    assert list(result.events["t"]) == [e.at for e in events]
    assert list(result.events["type"]) == [e.type for e in events]
    assert list(result.events["object_id"]) == [e.data["object"]["id"] for e in events]
    entries = platform.billing.entries()
    assert list(result.ledger["id"]) == [e.id for e in entries]
    assert list(result.ledger["overage"]) == [e.overage for e in entries]
    assert [None if pd.isna(m) else m for m in result.ledger["model"]] == [e.model for e in entries]
    snapshots = platform.sessions.sessions()
    assert list(result.sessions["session_id"]) == [s.id for s in snapshots]
    assert list(result.sessions["status"]) == [s.status for s in snapshots]
    assert list(result.sessions["billable_seconds"]) == [s.billable_seconds for s in snapshots]
    clock = platform.clock
    stamps = result.sessions["ended_at"].dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
    expected = [None if s.ended_at is None else clock.timestamp(s.ended_at) for s in snapshots]
    assert [None if pd.isna(a) else a for a in stamps] == expected
    calls = list(live.pool.calls or [])
    assert list(result.api_calls["outcome"]) == [c.outcome for c in calls]
    assert list(result.api_calls["resource_id"].fillna("-")) == [
        c.resource_id or "-" for c in calls
    ]


@pytest.mark.req("NB-2", "PERF-2")
def test_a_run_cut_short_shows_its_live_sessions_as_they_are() -> None:
    """With no cooldown some sessions are still live when the run is collected: their rows
    (read from their working state, not the store's columns) are what reading them one by one
    gives (their events' columns: ``test_event_columns``)."""
    played = play(_scenario("full", cooldown="0s"))
    live = {state.id for state in played.platform.sessions.store.live_states()}
    assert live
    result = collect(played.records())
    snapshots = played.platform.sessions.sessions()
    rows = result.sessions.set_index("session_id")
    for snapshot in snapshots:
        row = rows.loc[snapshot.id]
        assert (row["status"], row["billable_seconds"]) == (
            snapshot.status,
            snapshot.billable_seconds,
        )
        assert (None if pd.isna(row["worker_id"]) else row["worker_id"]) == snapshot.worker_id
    assert live <= set(rows.index[rows["worker_id"].notna()])
    events = list(played.platform.kernel.events)
    assert live <= {e.subject for e in events}
    assert list(result.events["object_id"]) == [e.subject for e in events]


@pytest.mark.req("NB-2", "CONV-1", "SIM-1")
def test_bulk_conversions_use_the_domains_arithmetic() -> None:
    clock = Clock(parse_scenario(small()).sim_config().epoch)
    rng = np.random.default_rng(3)
    seconds = np.concatenate([rng.uniform(0, 1e8, 50_000), np.arange(0, 5, 0.0005)])
    ms = epoch_ms(clock, seconds)
    assert all(ms[i] == clock.epoch_ms(float(s)) for i, s in enumerate(seconds))
    moments = times(clock, np.append(seconds[:1000], np.nan))
    assert moments.isna().sum() == 1
    assert [m.isoformat(timespec="milliseconds")[:-6] + "Z" for m in moments[:1000]] == [
        clock.timestamp(float(s)) for s in seconds[:1000]
    ]
    bits = [int(b) for b in rng.integers(0, 2**62, 1000)]
    bits = [b << 18 | 5 for b in bits]  # exercise all 80 bits
    stamp = ms[:1000]
    high = (stamp.astype(np.uint64) << np.uint64(16)) | np.array(
        [b >> 64 for b in bits], dtype=np.uint64
    )
    low = np.array([b & (2**64 - 1) for b in bits], dtype=np.uint64)
    text = ulids(high, low, "evt_")
    assert list(text) == ["evt_" + format_ulid(int(m), b) for m, b in zip(stamp, bits, strict=True)]


@pytest.mark.req("NB-2", "PERF-2")
def test_columns_built_in_arrow_equal_the_general_conversion() -> None:
    """The Arrow-built string columns (repeated values taken by code, texts written into one
    buffer) are the column ``strings`` makes of the same Python values: dtype, values, missing."""
    values = ["ok", None, "at_capacity", "żółw ☃", ""]
    picked = np.array([0, 1, 2, 3, 4, 4, 0, 1], dtype=np.int64)
    pd.testing.assert_series_equal(lookup(values, picked), strings([values[c] for c in picked]))
    pd.testing.assert_series_equal(lookup(values, picked[:0]), strings([]))
    texts = ['{"a":1}', "", "żółw ☃", '{"b":[null,2.5]}'] * 3
    pd.testing.assert_series_equal(text_column(iter(texts)), strings(texts))
    pd.testing.assert_series_equal(text_column(iter([])), strings([]))
    for chunk in (1, 2, 5, 7, 100):  # chunks that split the strings anywhere, or not at all
        pd.testing.assert_series_equal(text_column(iter(texts), chunk=chunk), strings(texts))
    # A column written in chunks is written to Parquet as the same bytes as one array.
    many = [f'{{"n":{i},"s":"{"x" * (i % 50)}"}}' for i in range(5_000)]
    written = []
    for chunk in (1024, len(many)):
        out = io.BytesIO()
        pd.DataFrame({"data": text_column(iter(many), chunk=chunk)}).to_parquet(out, index=False)
        written.append(out.getvalue())
    assert written[0] == written[1]


@pytest.mark.req("NB-2", "PERF-3")
def test_ledger_daily_grouped_on_integer_keys_equals_a_group_by_of_the_rows(
    results: dict[str, Any],
) -> None:
    """``ledger_daily`` (grouped on one integer key per row) is the pandas group-by of the
    ledger table by organization, UTC day, kind and billing surface."""
    full = results["full"]
    keys = ["org_id", "day", "kind", "billing_surface"]
    rows = full.ledger.assign(day=full.ledger["at"].dt.strftime("%Y-%m-%d"))
    general = (
        rows.groupby(keys, dropna=False)
        .agg(
            rows=("credits", "size"),
            credits=("credits", "sum"),
            billable_seconds=("billable_seconds", "sum"),
        )
        .reset_index()
        .sort_values(keys, ignore_index=True)
    )
    daily = full.ledger_daily.drop(columns="organization").sort_values(keys, ignore_index=True)
    assert len(daily) > 1 and daily["billing_surface"].isna().any()
    pd.testing.assert_frame_equal(daily, general[daily.columns], check_dtype=False)


@pytest.mark.req("NB-2", "PERF-3")
def test_a_released_run_gives_the_same_tables_and_drops_its_event_log() -> None:
    """A handed-over platform (``simulate``'s) and ``collect(raw, release=True)`` (what
    ``run_scenario`` does) give every table exactly as a platform kept live and a collect that
    keeps the run, though the platform's records are dropped once exported and each table once
    its frames are built: then the event log holds nothing and keeps nothing more, the clients'
    logs, the session store's rows and the ledger's rows are gone, and so are the run's
    tables."""
    scenario = _scenario("full")
    kept = collect(play(scenario).records())
    live = play(scenario)
    raw = live.hand_over()
    released = collect(raw, release=True)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(released, name), getattr(kept, name), obj=name)
    assert len(kept.events) > 0
    log = live.platform.kernel.events
    assert len(log) == 0 and log.payloads == [] and not log.keep
    assert live.pool.calls is None and live.pool.clients is None
    assert len(live.platform.sessions.store) == 0 < len(kept.sessions)
    assert len(live.platform.billing.ledger) == 0 < len(kept.ledger)
    assert len(live.platform.runs.runs()) == 0 < len(kept.runs)
    assert raw.tables == {}


@pytest.mark.req("NB-2", "PERF-3")
def test_a_released_run_answers_nothing_more_rather_than_from_emptied_records() -> None:
    """Once a run's platform is handed over and ``collect(raw, release=True)`` has dropped its
    tables, collecting the run again would give empty tables and a call on its platform would
    answer from emptied stores (a keyed create's replay would find no session): both refuse,
    with a message that says why. Records taken from a platform kept live leave it answering
    as before."""
    scenario = _scenario("full")
    kept = play(scenario)
    collect(kept.records())
    caller = kept.organizations[0].callers[0]
    assert kept.platform.call("listSessions", caller, {}).body["data"]

    live = play(scenario)
    raw = live.hand_over()
    collect(raw, release=True)
    with pytest.raises(ValueError, match="collected with release=True"):
        collect(raw)
    with pytest.raises(PlatformHandedOver, match=r"listSessions: .* released"):
        live.platform.call("listSessions", live.organizations[0].callers[0], {})
    assert simulate(scenario).tables  # a run of its own: ``simulate`` hands its platform over


@pytest.mark.req("NB-2", "PERF-2")
def test_a_call_logs_sparse_retry_columns_read_back_as_appended() -> None:
    """Only refusals keep a Retry-After or a delay (by row): read one by one (from either end)
    and in bulk, every request shows what was appended for it, ``None``/NaN elsewhere."""
    log = CallLog()
    rows = [(None, None), (3.0, 3.0), (None, 2.5), (None, None), (7.0, None)]
    for number, (retry_after, delay) in enumerate(rows):
        outcome = "ok" if retry_after is None and delay is None else "rate_limit"
        log.append(
            float(number), number, "createSession", "api", "Org", "org_1", 0, 1, outcome,
            None, retry_after, delay, None, None,
        )  # fmt: skip
    assert [(c.retry_after, c.delay) for c in log] == rows
    assert (log[-1].retry_after, log[-5].delay) == (7.0, None)
    with pytest.raises(IndexError):
        log[len(rows)]
    table = to_frame(log.export(), Clock(parse_scenario(small()).sim_config().epoch))
    bulk = list(zip(table["retry_after"].tolist(), table["delay"].tolist(), strict=True))
    assert [tuple(None if math.isnan(v) else v for v in pair) for pair in bulk] == rows


@pytest.mark.req("PERF-3", "NB-2")
def test_a_summary_runs_empty_tables_are_its_own(results: dict[str, Any]) -> None:
    """The empty per-row frames of summary runs are built once; each run gets a copy, so a
    caller that changes one run's frame changes no other run's."""
    first = run_scenario(_scenario("summary"))
    for name in (*_PER_ROW, "events"):
        first.tables()[name]["mine"] = 1
        first.tables()[name].attrs["note"] = "changed"
    later = run_scenario(_scenario("summary", seed=7))
    for name in (*_PER_ROW, "events"):
        frame = later.tables()[name]
        assert "mine" not in frame.columns and not frame.attrs, name
        pd.testing.assert_frame_equal(frame, results["summary"].tables()[name])
