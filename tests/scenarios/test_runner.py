"""NB-2 and SIM-2: the runner's tables, their shapes, their consistency and their determinism."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.runner import run_scenario
from harness.runner.arrivals import arrival_instants, arrival_times, merged, poisson_times
from harness.runner.metrics import METRICS, USAGE_KINDS, summarize, summary_markdown
from harness.runner.tables import TABLES, RunResult
from harness.scenarios import parse_scenario
from harness.scenarios.parts import Diurnal
from tests.scenarios.helpers import scenario, small

UTC_TIME = "datetime64[us, UTC]"


@pytest.fixture(scope="module")
def result() -> RunResult:
    return run_scenario(scenario())


def _kinds(frame: pd.DataFrame) -> dict[str, str]:
    out = {}
    for column, dtype in frame.dtypes.items():
        if str(dtype) == UTC_TIME:
            out[str(column)] = "time"
        elif isinstance(dtype, pd.CategoricalDtype):
            out[str(column)] = "category"
        elif pd.api.types.is_string_dtype(dtype):
            out[str(column)] = "str"
        elif pd.api.types.is_bool_dtype(dtype):
            out[str(column)] = "bool"
        elif pd.api.types.is_integer_dtype(dtype):
            out[str(column)] = "int"
        elif pd.api.types.is_float_dtype(dtype):
            out[str(column)] = "float"
        else:
            out[str(column)] = str(dtype)
    return out


@pytest.mark.req("NB-2")
def test_session_table_schema(result: RunResult) -> None:
    assert _kinds(result.sessions) == {
        "session_id": "str", "organization": "category", "org_id": "category", "client": "int",
        "avatar_id": "category", "quality": "category", "surface": "category",
        "transport": "category", "transport_url": "str", "transport_room_name": "str",
        "transport_audio_source": "str", "status": "category", "billable_seconds": "int",
        "frames": "int", "error_code": "category", "end_reason": "category",
        "worker_id": "category", "idle_timeout_seconds": "int", "max_duration_seconds": "int",
        "metadata": "str", "embed_id": "str", "charged": "bool", "barge_ins": "int",
        "created_at": "time", "started_at": "time", "first_frame_at": "time",
        "ending_at": "time", "ended_at": "time", "placement_wait_seconds": "float",
        "first_frame_wait_seconds": "float", "planned_length": "float",
    }  # fmt: skip
    assert result.sessions["session_id"].is_unique
    assert result.sessions["session_id"].str.startswith("sess_").all()


@pytest.mark.req("NB-2")
def test_api_calls_utilization_and_ledger_schemas(result: RunResult) -> None:
    assert _kinds(result.api_calls) == {
        "at": "time", "t": "float", "client": "int", "operation": "category",
        "surface": "category", "organization": "category", "org_id": "category", "key": "int",
        "attempt": "int", "outcome": "category", "error_type": "category",
        "retry_after": "float", "delay": "float", "idempotency_key": "str", "resource_id": "str",
        "retried": "bool",
    }  # fmt: skip
    assert _kinds(result.utilization) == {
        "at": "time", "t": "float", "capacity": "int", "workers": "int", "idle": "int",
        "busy": "int", "restarting": "int", "queued": "int", "busy_max": "int",
        "queued_max": "int", "busy_seconds": "float", "worker_seconds": "float",
        "utilization": "float",
    }  # fmt: skip
    ledger = _kinds(result.ledger)
    for column, kind in {"id": "str", "at": "time", "t": "float", "kind": "category",
                         "organization": "category", "credits": "int",
                         "billing_surface": "category", "overage": "int",
                         "billable_seconds": "int"}.items():  # fmt: skip
        assert ledger[column] == kind, column
    assert _kinds(result.events) == {
        "event_id": "str", "at": "time", "t": "float", "type": "category",
        "organization": "category", "org_id": "category", "object_type": "category",
        "object_id": "str", "status": "category", "reason": "category", "code": "category",
        "billable_seconds": "int", "frames": "int", "worker_id": "category",
        "drain_seconds": "float", "dropped_seconds": "float", "payload": "str",
    }  # fmt: skip
    assert set(result.tables()) == set(TABLES)


@pytest.mark.req("NB-2")
def test_tables_agree_with_each_other(result: RunResult) -> None:
    sessions = result.sessions
    placed = sessions[sessions["started_at"].notna()]
    wait = (placed["started_at"] - placed["created_at"]).dt.total_seconds()
    assert wait.to_numpy() == pytest.approx(placed["placement_wait_seconds"].to_numpy(), abs=1e-6)
    framed = sessions[sessions["first_frame_at"].notna()]
    wait = (framed["first_frame_at"] - framed["created_at"]).dt.total_seconds()
    assert wait.to_numpy() == pytest.approx(framed["first_frame_wait_seconds"].to_numpy(), abs=1e-6)
    assert (framed["first_frame_wait_seconds"] > framed["placement_wait_seconds"]).all()
    # The API's own usage summary (UTC) equals the session table and the ledger, per organization.
    usage = result.usage[result.usage["timezone"] == "UTC"].set_index("organization")
    seconds = sessions.groupby("organization")["billable_seconds"].sum()
    ledger = result.ledger[result.ledger["kind"].isin(USAGE_KINDS)]
    credits = ledger.groupby("organization")["credits"].sum()
    for org in usage.index:
        assert usage.loc[org, "billable_seconds"] == seconds.get(org, 0)
        assert usage.loc[org, "credits_charged"] == credits.get(org, 0)
    # Daily buckets add up to the total in every timezone.
    daily = result.usage_daily.groupby(["organization", "timezone"])["credits"].sum()
    for row in result.usage.itertuples(index=False):
        assert daily.get((row.organization, row.timezone), 0) == row.credits_charged
    # Every created session has exactly one successful create call.
    ok = result.api_calls[
        (result.api_calls["operation"] == "createSession") & (result.api_calls["outcome"] == "ok")
    ]
    assert sorted(ok["resource_id"]) == sorted(sessions["session_id"])
    assert set(sessions["surface"]) <= {"api", "playground", "pipecat"}
    assert (sessions.loc[sessions["surface"] == "pipecat", "transport"] == "pipecat").all()
    # The session ids in the events are the sessions'.
    session_events = result.events[result.events["object_type"] == "session"]
    assert set(session_events["object_id"]) == set(sessions["session_id"])


@pytest.mark.req("NB-2")
def test_utilization_is_sampled_on_a_fixed_grid(result: RunResult) -> None:
    grid = result.utilization["t"].to_numpy()
    expected = [60.0 * i for i in range(int(result.duration // 60) + 1)]
    assert list(grid) == expected
    util = result.utilization
    assert (util["busy"] + util["idle"] + util["restarting"] == util["workers"]).all()
    # Each row's meter covers its interval: worker-seconds are the pool's size times its length
    # (the pool never changes here), the busy ones at most that, and the peaks at least the
    # snapshots that open the interval and the next.
    lengths = np.diff([*grid, result.duration])
    assert util["worker_seconds"].to_numpy() == pytest.approx(util["workers"] * lengths)
    assert (util["busy_seconds"] <= util["worker_seconds"] + 1e-9).all()
    assert (util["busy_max"] >= util["busy"]).all()
    assert (util["busy_max"].iloc[:-1].to_numpy() >= util["busy"].iloc[1:].to_numpy()).all()
    defined = util["utilization"].dropna()
    assert defined.between(0, 1).all() and len(defined) == (lengths > 0).sum()


@pytest.mark.req("SIM-2", "NB-2")
def test_same_seed_gives_identical_tables_and_files(tmp_path: Path) -> None:
    first = run_scenario(scenario())
    second = run_scenario(scenario())
    for name in TABLES:
        pd.testing.assert_frame_equal(first.tables()[name], second.tables()[name], obj=name)
    a = first.write_parquet(tmp_path / "a")
    b = second.write_parquet(tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    other = run_scenario(scenario(), seed=4)
    assert not first.sessions["session_id"].equals(other.sessions["session_id"])


@pytest.mark.req("NB-1", "NB-2")
def test_retries_wait_exactly_retry_after_and_reuse_one_idempotency_key() -> None:
    loaded = parse_scenario(
        small(
            config={"scheduler": {"workers": 1, "admission_policy": "reject"}},
            organizations=[{"name": "Solo", "plan": "enterprise", "keys": 10}],
            arrivals=[{"kind": "burst", "at": 0, "count": 6, "within": "10s"}],
            sessions={"length": {"kind": "constant", "value": 40}, "surface": {"api": 1}},
            client={"max_attempts": 4, "base_delay": "1s", "honour_retry_after": True},
            runs=[],
        )
    )
    calls = run_scenario(loaded).api_calls
    creates = calls[calls["operation"] == "createSession"]
    refused = creates[creates["outcome"] == "at_capacity"]
    assert len(refused) > 0 and refused["retry_after"].notna().all()
    for client, attempts in creates.groupby("client"):
        attempts = attempts.sort_values("attempt")
        assert attempts["attempt"].tolist() == list(range(1, len(attempts) + 1)), client
        assert attempts["idempotency_key"].nunique() == 1
        assert attempts["retried"].tolist() == [a > 1 for a in attempts["attempt"]]
        rows = attempts.to_dict("records")
        for before, after in itertools.pairwise(rows):
            assert before["delay"] == before["retry_after"]
            assert after["t"] == pytest.approx(before["t"] + before["retry_after"])
        last = rows[-1]
        assert last["outcome"] == "ok" or last["attempt"] == 4 or math.isnan(last["delay"])


@pytest.mark.req("NB-1")
def test_without_retry_after_the_client_backs_off_exponentially() -> None:
    loaded = parse_scenario(
        small(
            config={"scheduler": {"workers": 1, "admission_policy": "reject"}},
            organizations=[{"name": "Solo", "plan": "enterprise", "keys": 10}],
            arrivals=[{"kind": "burst", "at": 0, "count": 3, "within": 0}],
            sessions={"length": {"kind": "constant", "value": 600}, "surface": {"api": 1}},
            client={"max_attempts": 4, "base_delay": "3s", "multiplier": 2,
                    "honour_retry_after": False, "idempotency_keys": False},
            runs=[],
        )
    )  # fmt: skip
    creates = run_scenario(loaded).api_calls.query("operation == 'createSession'")
    refused_clients = creates[creates["attempt"] == 4]["client"].unique()
    assert len(refused_clients) == 2
    for client in refused_clients:
        rows = creates[creates["client"] == client].sort_values("attempt")
        assert rows["delay"].tolist()[:3] == [3.0, 6.0, 12.0]
        assert rows["t"].diff().dropna().tolist() == [3.0, 6.0, 12.0]
        assert rows["idempotency_key"].isna().all()


@pytest.mark.req("NB-1")
def test_diurnal_arrivals_follow_the_profile() -> None:
    import random

    loaded = parse_scenario(
        small(
            duration="2d",
            arrivals=[{"kind": "diurnal", "base_rate_per_hour": 30,
                       "profile": [0.0] * 9 + [1.0] + [0.0] * 14}],
        )
    )  # fmt: skip
    times = arrival_times(loaded.arrivals[0], loaded.duration, loaded.sim_config().epoch,
                          random.Random(1))  # fmt: skip
    assert times and all(int(t // 3600) % 24 == 9 for t in times)
    assert 20 < len(times) < 110  # two hours at 30/h


@pytest.mark.req("NB-1", "SIM-2")
def test_sources_drawn_lazily_and_merged_give_the_sorted_arrivals() -> None:
    """The dispatcher's lazy merge is the order of drawing every source whole and sorting all
    arrivals by (time, source, sequence), ties included (two bursts of identical instants)."""
    import random

    loaded = parse_scenario(
        small(
            duration="3h",
            arrivals=[
                {"kind": "poisson", "rate_per_hour": 40},
                {"kind": "burst", "at": "1h", "count": 5, "within": 0},
                {"kind": "diurnal", "base_rate_per_hour": 20, "profile": [1.0] * 24},
                {"kind": "burst", "at": "1h", "count": 3, "within": 0},
            ],
        )
    )  # fmt: skip
    epoch, duration = loaded.sim_config().epoch, loaded.duration
    whole = sorted(
        (t, index, seq)
        for index, arrival in enumerate(loaded.arrivals)
        for seq, t in enumerate(arrival_times(arrival, duration, epoch, random.Random(index)))
    )
    lazy = merged(
        (arrival_instants(arrival, duration, epoch, random.Random(index)), index)
        for index, arrival in enumerate(loaded.arrivals)
    )
    assert [(t, index) for t, index, _seq in whole] == list(lazy)
    assert len(whole) > 100 and sum(1 for t, _i, _s in whole if t == 3600.0) == 8


@pytest.mark.req("NB-1", "SIM-2")
def test_arrival_gaps_are_the_streams_expovariate_hour_by_hour() -> None:
    """The arrival processes draw their gaps with ``rng.expovariate``, restarted at each hour of
    a diurnal profile (a zero-rate hour brings nobody), and a single source is tagged as the
    merge would tag it."""
    import random

    def reference(pieces: list[tuple[float, float, float]], seed: int) -> list[float]:
        rng, out = random.Random(seed), []
        for rate, start, end in pieces:
            if rate <= 0:
                continue
            t = start + rng.expovariate(rate / 3600.0)
            while t < end:
                out.append(t)
                t += rng.expovariate(rate / 3600.0)
        return out

    loaded = parse_scenario(small())
    epoch = loaded.sim_config().epoch.replace(hour=0, minute=0, second=0)
    profile = [0.0, 0.5, 2.0] + [1.0] * 21
    for seed in range(5):
        steady = poisson_times(37.0, 0.0, 5 * 3600.0, random.Random(seed))
        assert steady == reference([(37.0, 0.0, 5 * 3600.0)], seed) and len(steady) > 100
        diurnal = Diurnal(kind="diurnal", base_rate_per_hour=90.0, profile=profile)
        instants = arrival_times(diurnal, 30 * 3600.0, epoch, random.Random(seed))
        hours = [(90.0 * profile[h % 24], h * 3600.0, (h + 1) * 3600.0) for h in range(30)]
        assert instants == reference(hours, seed)
        assert not any(0.0 <= t < 3600.0 or 24 * 3600.0 <= t < 25 * 3600.0 for t in instants)
        assert list(merged([(iter(instants), "only")])) == [(t, "only") for t in instants]


@pytest.mark.req("NB-2")
def test_metrics_and_summary(result: RunResult) -> None:
    metrics = summarize(result)
    assert set(metrics) == set(METRICS)
    assert metrics["sessions_created"] == len(result.sessions)
    assert metrics["credits_charged"] > 0
    text = summary_markdown(result)
    assert "# Scenario `small` (seed 3)" in text and "| sessions_created |" in text


@pytest.mark.req("NB-1", "NB-2")
def test_silent_clients_are_ended_by_the_idle_timeout_and_never_hang_up() -> None:
    loaded = parse_scenario(
        small(
            sessions={"length": {"kind": "constant", "value": 300}, "audio": None,
                      "idle_timeout_seconds": 20, "surface": {"api": 1}},
            runs=[],
        )
    )  # fmt: skip
    result = run_scenario(loaded)
    started = result.sessions[result.sessions["first_frame_at"].notna()]
    assert len(started) > 0
    assert (started["end_reason"] == "idle_timeout").all()
    assert (started["billable_seconds"] <= 21).all()
    assert not (result.api_calls["operation"] == "endSession").any()


@pytest.mark.req("NB-1", "NB-2")
def test_talking_clients_hang_up_after_their_planned_length() -> None:
    loaded = parse_scenario(
        small(sessions={"length": {"kind": "constant", "value": 90}, "surface": {"api": 1}},
              runs=[])
    )  # fmt: skip
    result = run_scenario(loaded)
    started = result.sessions[result.sessions["first_frame_at"].notna()]
    assert (started["end_reason"] == "client_request").all()
    running = (started["ended_at"] - started["first_frame_at"]).dt.total_seconds()
    # 90 s of running, then the drain (at most drain_max_seconds = 5).
    assert running.between(90, 95 + 1e-6).all()
    ends = result.api_calls[result.api_calls["operation"] == "endSession"]
    assert sorted(ends["resource_id"]) == sorted(started["session_id"])
