"""NB-12: recorded arrivals play each recorded session at its offset with its length, quality
and surface (``speed``, ``shift``, ``scale``, ``since``), and a run replayed from its own
sessions table reproduces the run."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.runner import run_scenario
from harness.runner.arrivals import recorded_sessions
from harness.runner.metrics import summarize
from harness.scenarios import Recorded, ScenarioError, load_scenario, parse_scenario
from harness.sweep import aggregate, load_sweep
from harness.traffic.recording import read_recording, recording_from_frame

pytestmark = pytest.mark.req("NB-12")

EPOCH = "2026-01-01T00:00:00Z"  # the default SimConfig.epoch: offset 0 is the run's start


def _base(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "seed": 3,
        "duration": "2h",
        "config": {"scheduler": {"workers": 4}},
        "limits": {"concurrency": "off", "rate": "off"},
        "organizations": [{"name": "Acme", "plan": "pro"}, {"name": "Bistro", "plan": "pro"}],
        "arrivals": [{"kind": "poisson", "rate_per_hour": 60}],
        "sessions": {
            "length": {"kind": "exponential", "mean": 240},
            "quality": {"standard": 3, "pro": 1},
            "surface": {"api": 3, "embed": 1, "pipecat": 1},
        },
    }
    data.update(overrides)
    return data


def _recorded(path: Path, **fields: Any) -> dict[str, Any]:
    return {"kind": "recorded", "path": str(path), "since": EPOCH, **fields}


def _tables(tmp_path: Path, data: dict[str, Any], seed: int | None = None) -> Path:
    out = tmp_path / f"run-{seed}"
    run_scenario(parse_scenario(data), seed=seed).write_parquet(out)
    return out / "sessions.parquet"


SAME = [
    "session_id", "organization", "quality", "surface", "status", "error_code", "end_reason",
    "billable_seconds", "worker_id", "planned_length",
]  # fmt: skip
INSTANTS = ["created_at", "started_at", "first_frame_at", "ended_at"]


def test_a_run_replayed_from_its_sessions_with_its_seed_is_the_same_run(tmp_path: Path) -> None:
    """Every session again, the same in every column (instants to the microsecond the table
    keeps): the recording carries everything the clients decided, the seed the service's
    draws, and no stream of the one depends on the other."""
    data = _base()
    original = run_scenario(parse_scenario(data))
    original.write_parquet(tmp_path / "run")
    replayed = run_scenario(
        parse_scenario(_base(arrivals=[_recorded(tmp_path / "run" / "sessions.parquet")]))
    )
    first, again = original.sessions, replayed.sessions
    assert len(first) == len(again) > 100
    assert set(first["status"]) >= {"ended", "failed"}  # the pool was short: some waited, failed
    pd.testing.assert_frame_equal(first[SAME], again[SAME], check_categorical=False)
    for column in INSTANTS:
        gap = (first[column] - again[column]).abs().max()
        assert gap <= pd.Timedelta(microseconds=2), column


#: The metrics a replay must reproduce: what the pool did with the traffic.
REPRODUCED = [
    "sessions_created", "no_capacity_rate", "placement_wait_probability",
    "mean_placement_wait_seconds", "p95_placement_wait_seconds", "mean_first_frame_wait_seconds",
    "p95_first_frame_wait_seconds", "mean_utilization", "billable_seconds",
]  # fmt: skip


def test_replaying_a_runs_sessions_reproduces_its_metrics_within_their_intervals(
    tmp_path: Path,
) -> None:
    """n = 8 replications of the scenario (seeds 1..8), and 8 replays, each of one of those
    runs' ``sessions.parquet`` under the same configuration with a fresh seed (101..108), so the
    service's draws are new and only the traffic is shared. Per metric: 95 % intervals by
    ``harness.sweep.aggregate`` (Wilson on the pooled counts for proportions, Student t over
    the replications, clipped, otherwise). Each side's mean lies within the other's interval."""
    data = _base(duration="90m")
    rows = []
    for seed in range(1, 9):
        scenario = parse_scenario(data)
        original = run_scenario(scenario, seed=seed)
        original.write_parquet(tmp_path / str(seed))
        rows.append({"point": 0, **summarize(original, scenario.window())})
        replay = parse_scenario(
            _base(duration="90m", arrivals=[_recorded(tmp_path / str(seed) / "sessions.parquet")])
        )
        rows.append({"point": 1, **summarize(run_scenario(replay, seed=100 + seed))})
    table = aggregate(pd.DataFrame(rows), [], REPRODUCED).set_index(["metric", "point"])
    for metric in REPRODUCED:
        first, again = table.loc[(metric, 0)], table.loc[(metric, 1)]
        assert first["n"] == again["n"] == 8
        assert first["ci_low"] <= again["mean"] <= first["ci_high"], (metric, first, again)
        assert again["ci_low"] <= first["mean"] <= again["ci_high"], (metric, first, again)
    no_capacity = table.loc[("no_capacity_rate", 0)]
    assert no_capacity["method"] == "wilson" and 0.02 < no_capacity["mean"] < 0.5


def _offsets(tmp_path: Path, rows: list[tuple[float, float | None, str]]) -> Path:
    path = tmp_path / "offsets.csv"
    lines = ["offset_seconds,length_seconds,organization"]
    lines += [f"{o},{'' if length is None else length},{org}" for o, length, org in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_speed_and_shift_move_the_arrivals_and_scale_the_lengths(tmp_path: Path) -> None:
    path = _offsets(tmp_path, [(0, 100, "Acme"), (600, 50, "Bistro"), (1200, 10, "Acme")])
    arrival = {"kind": "recorded", "path": str(path), "speed": 2, "shift": "5m"}
    result = run_scenario(parse_scenario(_base(duration="1h", arrivals=[arrival])))
    clients = result.clients.sort_values("t")
    assert clients["t"].tolist() == pytest.approx([300.0, 600.0, 900.0])
    assert clients["planned_length"].tolist() == pytest.approx([50.0, 25.0, 5.0])
    assert clients["organization"].astype(str).tolist() == ["Acme", "Bistro", "Acme"]
    # Sessions that fall past the duration do not arrive.
    short = run_scenario(parse_scenario(_base(duration="14m", arrivals=[arrival])))
    assert short.clients["t"].tolist() == pytest.approx([300.0, 600.0])


def test_a_fixed_organization_and_unlabelled_sessions(tmp_path: Path) -> None:
    path = _offsets(tmp_path, [(float(i), None, "") for i in range(0, 400, 4)])
    drawn = run_scenario(parse_scenario(_base(duration="10m", arrivals=[_recorded_plain(path)])))
    counts = drawn.clients["organization"].astype(str).value_counts()
    assert set(counts.index) == {"Acme", "Bistro"} and counts.min() > 20  # by weight, 1:1
    # No recorded length: drawn from sessions.length, whose mean is 240 s.
    assert 150 < drawn.clients["planned_length"].mean() < 350
    fixed = _recorded_plain(path, organization="Bistro")
    one = run_scenario(parse_scenario(_base(duration="10m", arrivals=[fixed])))
    assert set(one.clients["organization"].astype(str)) == {"Bistro"}


def _recorded_plain(path: Path, **fields: Any) -> dict[str, Any]:
    return {"kind": "recorded", "path": str(path), **fields}


def test_recorded_qualities_and_surfaces_reach_the_service(tmp_path: Path) -> None:
    path = tmp_path / "mix.csv"
    path.write_text(
        "offset_seconds,length_seconds,quality,surface,organization\n"
        "0,30,pro,embed,Acme\n10,30,mock,pipecat,Acme\n20,30,lite,api,Bistro\n",
        encoding="utf-8",
    )
    result = run_scenario(parse_scenario(_base(duration="5m", arrivals=[_recorded_plain(path)])))
    sessions = result.sessions.sort_values("created_at")
    assert sessions["quality"].astype(str).tolist() == ["pro", "mock", "lite"]
    assert sessions["surface"].astype(str).tolist() == ["embed", "pipecat", "api"]
    assert sessions["planned_length"].tolist() == [30.0, 30.0, 30.0]
    # Billed from the first frame to the end of the worker's drain (at most 5 s, rounded up).
    assert all(30 <= b <= 36 for b in sessions["billable_seconds"])


def _plays(recording_path: Path, scale: float, seed: int) -> list[tuple[float, str | None]]:
    arrival = Recorded.model_validate(_recorded_plain(recording_path, scale=scale))
    recording = read_recording(recording_path)
    played = recorded_sessions(arrival, recording, 10_000.0, random.Random(seed))
    return [(round(at, 9), s.organization) for at, s in played]


def test_scale_thins_or_superposes_shifted_copies_the_same_way_for_a_seed(
    tmp_path: Path,
) -> None:
    path = _offsets(tmp_path, [(float(10 * i), 60, "Acme") for i in range(400)])
    original = _plays(path, 1.0, 1)
    assert [at for at, _ in original] == [float(10 * i) for i in range(400)]
    half = _plays(path, 0.5, 1)
    assert set(half) <= set(original)
    assert 150 < len(half) < 250  # binomial(400, 0.5): 10 standard deviations either side
    assert _plays(path, 0.5, 1) == half and _plays(path, 0.5, 2) != half
    double = _plays(path, 2.0, 1)
    assert len(double) == 800 and set(original) <= set(double)
    copy = sorted(set(double) - set(original))
    delta = copy[0][0]  # the second copy is the first, shifted as a whole within the gap
    assert 0 < delta < 10 and [at for at, _ in copy] == pytest.approx(
        [10 * i + delta for i in range(400)]
    )
    assert [at for at, _ in double] == sorted(at for at, _ in double)
    more = _plays(path, 2.5, 1)
    assert 900 < len(more) < 1100 and set(double) < set(more)  # copy 1 drawn as before


def test_scale_in_a_run_multiplies_the_sessions(tmp_path: Path) -> None:
    path = _offsets(tmp_path, [(float(30 * i), 20, "Acme") for i in range(100)])
    lone = run_scenario(parse_scenario(_base(duration="1h", arrivals=[_recorded_plain(path)])))
    tripled = _recorded_plain(path, scale=3)
    many = run_scenario(parse_scenario(_base(duration="1h", arrivals=[tripled])))
    assert len(lone.clients) == 100 and len(many.clients) == 300


def test_a_recording_beside_the_scenario_file_is_found_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plans"
    folder.mkdir()
    _offsets(folder, [(0, 30, "Acme"), (60, 30, "Acme")])
    (folder / "replay.yaml").write_text(
        "seed: 1\nduration: 10m\norganizations: [{name: Acme, plan: pro}]\n"
        "arrivals:\n  - kind: recorded\n    path: offsets.csv\n",
        encoding="utf-8",
    )
    (folder / "sweep.yaml").write_text(
        "base: replay.yaml\ngrid: {config.scheduler.workers: [1, 2]}\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario("plans/replay.yaml")
    assert isinstance(scenario.arrivals[0], Recorded)
    assert scenario.arrivals[0].path == str(folder / "offsets.csv")
    assert len(run_scenario(scenario).clients) == 2
    _sweep, base, points = load_sweep("plans/sweep.yaml")
    assert base == scenario and len(points) == 2


def test_problems_name_the_field_and_the_line_in_one_round(tmp_path: Path) -> None:
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("offset_seconds,quality\n0,pro\nsoon,ultra\n", encoding="utf-8")
    _offsets(tmp_path, [(0, 30, "Zeta"), (5, 30, "Acme")])
    (tmp_path / "s.yaml").write_text(
        "seed: 1\n"
        "duration: 10m\n"
        "organizations: [{name: Acme}]\n"
        "arrivals:\n"
        "  - kind: recorded\n"
        "    path: missing.parquet\n"
        "  - kind: recorded\n"
        "    path: bad.csv\n"
        "  - kind: recorded\n"
        "    path: offsets.csv\n"
        "    since: 2026-01-01T00:00:00Z\n"
        "  - kind: recorded\n"
        "    path: offsets.csv\n"
        "    speed: 0\n"
        "    scale: -1\n"
        "  - kind: recorded\n"
        "    path: offsets.csv\n"
        "    shift: 1h\n"
        "    organization: Acme\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(tmp_path / "s.yaml")
    source = str(tmp_path / "s.yaml")
    lines = str(info.value).splitlines()
    assert lines[0] == f"{source}: invalid (8 problems)"
    where = str(tmp_path)
    expected = [
        f"{source}:6: arrivals[0].path: {where}/missing.parquet: no such file",
        f"{source}:8: arrivals[1].path: {where}/bad.csv: column offset_seconds: not a number "
        "of seconds (line 3; e.g. 'soon')",
        f"{source}:8: arrivals[1].path: {where}/bad.csv: column quality: must be one of mock, "
        "lite, standard, pro (line 3; e.g. 'ultra')",
        f"{source}:10: arrivals[2].path: {where}/offsets.csv has sessions of 'Zeta', not among "
        "the scenario's organizations: add them, or set `organization` to send every session "
        "of the recording as one of them",
        f"{source}:11: arrivals[2].since: {where}/offsets.csv is written in offsets "
        "(offset_seconds), with no instants",
        f"{source}:14: arrivals[3].speed: Input should be greater than 0",
        f"{source}:15: arrivals[3].scale: Input should be greater than 0",
        f"{source}:18: arrivals[4].shift: is not before the duration 600 s",
    ]
    assert sorted(lines[1:]) == sorted(f"  {line}" for line in expected)


def test_a_recording_with_nothing_in_the_run_is_refused(tmp_path: Path) -> None:
    path = _offsets(tmp_path, [(7200, 30, "Acme")])
    with pytest.raises(ScenarioError, match=r"none of the 1 sessions of .* falls within the run"):
        parse_scenario(_base(duration="1h", arrivals=[_recorded_plain(path)]))


def test_sessions_recorded_before_since_are_left_out() -> None:
    frame = pd.DataFrame(
        {"created_at": ["2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", "2026-01-01T01:00:30Z"]}
    )
    recording = recording_from_frame(frame)
    arrival = Recorded(kind="recorded", path="x", since=pd.Timestamp("2026-01-01T01:00:00Z"))
    played = list(recorded_sessions(arrival, recording, 3600.0, random.Random(0)))
    assert [at for at, _ in played] == [0.0, 30.0]
    assert all(session.length is None and session.organization is None for _, session in played)
    assert not math.isnan(recording.span)
