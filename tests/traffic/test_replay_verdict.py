"""PLAN-15 and PLAN-16: a replay sends idempotency keys of its own, says in one line whether the
deployment agrees, names the refusals by cause, exits 1 when a metric disagrees or most creates
were refused, and states each metric's fidelity error in percent beside its interval."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness import cli
from harness.runner import play
from harness.runner.tables import collect
from harness.scenarios import parse_scenario
from harness.traffic import replay_command
from harness.traffic.recording import recording_from_frame
from harness.traffic.replay import replay
from harness.traffic.replay_report import report_markdown
from sim.asgi.app import create_app
from tests.traffic.test_replay import FACTOR, _Deployment, _recording, _served


def _served_traffic() -> dict[str, Any]:
    """A deployment serving its own traffic (``serve --scenario``), its clients sending
    idempotency keys as the scenario's clients do."""
    return _served(
        duration="20m", cooldown="10m",
        arrivals=[{"kind": "poisson", "rate_per_hour": 60}],
        client={"max_attempts": 1, "idempotency_keys": True},
        sessions={"length": {"kind": "exponential", "mean": 120}, "audio": None},
    )  # fmt: skip


class _Served(_Deployment):
    """The platform that served the traffic, answering the replay afterwards."""

    def __init__(self, data: dict[str, Any]) -> None:
        scenario = parse_scenario(data)
        played = play(scenario)  # live: it answers the capture and the replay afterwards
        raw = played.records()
        self.platform = played.platform
        self.key = played.organizations[0].callers[0].key.secret
        self.transport = httpx.ASGITransport(app=create_app(self.platform))
        self.wall = 0.0
        self.scenario = scenario
        # As a capture records them: lengths from the billed seconds, not the clients' plans.
        sessions = collect(raw).sessions.drop(columns=["planned_length"])
        self.recording = recording_from_frame(sessions, "the served traffic")


@pytest.mark.req("PLAN-15")
def test_a_replay_against_the_server_it_was_captured_from_agrees(tmp_path: Path) -> None:
    """The served traffic's clients sent keys ``scn-1``, ``scn-2``...; a replay reusing them
    is refused (the keys were used for other requests) and says so, naming the cause, with
    exit 1; a replay with keys of its own agrees, exit 0."""
    data = _served_traffic()
    served = _Served(data)
    reused = served.replay(served.recording, served.scenario, tmp_path / "a", replications=3,
                           key_prefix="scn-")  # fmt: skip
    assert reused.mostly_refused and reused.exit_code == 1
    (code,) = reused.refusals
    assert code.startswith("idempotency") and reused.refusals[code] > len(served.recording) / 2
    assert reused.verdict.startswith("replay: INVALID: the deployment refused most creates")
    assert code in reused.verdict
    own = served.replay(served.recording, served.scenario, tmp_path / "b", replications=5)
    assert own.key_prefix.startswith("replay-") and own.key_prefix != "scn-"
    calls = own.observed.api_calls
    keys = calls.loc[calls["operation"] == "createSession", "idempotency_key"]
    assert keys.str.startswith(own.key_prefix).all()
    assert not own.refusals and own.exit_code == 0
    assert own.verdict.startswith("replay: agrees (") and "0 of " in own.verdict
    report = report_markdown(own, "http://deployment")
    assert f"**{own.verdict}**" in report and "| (none) | | 0 |" in report


@pytest.mark.req("PLAN-15")
def test_the_command_prints_a_verdict_and_gates_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Against a deployment with one worker fewer than predicted (3): the last line says which
    metrics disagree and the command exits 1; against the predicted one, exit 0."""
    served = _served()
    scenario_file = tmp_path / "predicted.yaml"
    scenario_file.write_text(str(served).replace("'", '"'), encoding="utf-8")
    _recording(tmp_path, served)
    recording = tmp_path / "run" / "sessions.parquet"
    for workers, expected in ((2, 1), (3, 0)):
        deployment = _Deployment(
            parse_scenario(_served(config={"scheduler": {"workers": workers}}))
        )
        monkeypatch.setattr(
            replay_command, "replay",
            functools.partial(replay, transport=deployment.transport, sleep=deployment.sleep,
                              monotonic=deployment.monotonic),
        )  # fmt: skip
        argv = ["replay", str(recording), "--base-url", "http://deployment", "--api-key",
                deployment.key, "--time-factor", str(FACTOR), "--scenario", str(scenario_file),
                "--out", str(tmp_path / f"out{workers}"), "--replications", "10"]  # fmt: skip
        assert cli.main(argv) == expected
        last = capsys.readouterr().out.strip().splitlines()[-1]
        if expected:
            assert last.startswith("replay: DISAGREES: ") and "no_capacity" in last
        else:
            assert last.startswith("replay: agrees (")


@pytest.mark.req("PLAN-16")
def test_each_metric_states_its_fidelity_error_in_percent(tmp_path: Path) -> None:
    served = _served()
    scenario = parse_scenario(served)
    result = _Deployment(scenario).replay(
        _recording(tmp_path, served), scenario, tmp_path / "out", replications=5
    )
    table = result.comparison.set_index("metric")
    row = table.loc["mean_first_frame_wait_seconds"]
    observed, predicted = row["observed"], row["predicted"]
    assert row["error_percent"] == pytest.approx((predicted - observed) / observed * 100)
    assert row["error_low_percent"] <= row["error_percent"] <= row["error_high_percent"]
    assert row["error_low_percent"] == pytest.approx(
        (row["predicted_low"] - observed) / observed * 100
    )
    zero = table[table["observed"] == 0]
    assert zero["error_percent"].map(math.isnan).all()  # no percent of nothing
    report = report_markdown(result, "http://deployment")
    assert "error % (95 % CI)" in report
    line = next(r for r in report.splitlines() if r.startswith("| mean_first_frame_wait_seconds"))
    assert f"{row['error_percent']:+.1f} %" in line


@pytest.mark.req("NB-16")
def test_a_replay_runs_where_an_event_loop_is_already_running(tmp_path: Path) -> None:
    """A notebook's kernel runs an event loop in the thread that calls ``replay``; the HTTP
    door, which runs a loop of its own, used to fail there ("Cannot run the event loop while
    another loop is running"). Called from inside a running loop, the replay agrees."""
    import asyncio

    served = _served()
    scenario = parse_scenario(served)
    deployment = _Deployment(scenario)
    recording = _recording(tmp_path, served)

    async def inside_a_running_loop() -> Any:
        return deployment.replay(recording, scenario, tmp_path / "out", replications=3)

    result = asyncio.run(inside_a_running_loop())
    assert result.exit_code == 0, result.verdict
    assert len(result.observed.api_calls) > 0
