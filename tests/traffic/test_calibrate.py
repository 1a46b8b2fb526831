"""PLAN-14 and PLAN-16: ``calibrate`` recovers a served simulator's start-up and pool from a capture
of its sessions, writes an overlay ``run``, ``plan`` and ``replay`` take, and ``replay`` of the
held-out part of the capture agrees with the calibrated scenario, but not with a deployment that
lost a third of its workers.

The served simulator here is a platform in process behind its facade: its own clients play the
traffic, ``capture`` walks its sessions through the API (``Target.in_process``), and replays
reach it through httpx's ASGI transport, as in ``test_replay``; a slow test does the same with
``avatar-sim serve``, ``capture``, ``calibrate`` and ``replay`` on the command line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import yaml

from harness import cli
from harness.plan.feasible import startup_quantile
from harness.runner import play
from harness.scenarios import Scenario, load_scenario, parse_scenario
from harness.target import Credentials, Target
from harness.traffic.calibrate import calibrate
from harness.traffic.capture import capture
from harness.traffic.recording import Recording, read_recording
from sim.asgi.app import create_app
from tests.traffic.test_replay import _Deployment

#: The served simulator: eighteen workers booting in about 3 s (the seed's default: 2 s, eight).
WORKERS = 18
BOOT = {"kind": "lognormal", "median": 3.0, "sigma": 0.4, "cap": 12.0}
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
#: Sessions an hour: some 14 Erlangs, so that sessions queue now and then, and about 350
#: start-ups in the fitted hour (the 5 % quantile of a lognormal fitted to n = 350 is within
#: 10 % of the true one by more than two of its standard errors).
RATE = 360


def _config(workers: int = WORKERS) -> dict[str, Any]:
    """What the deployment runs (and a base scenario that knows its limits, not its pool)."""
    return {
        "seed": 17,
        "duration": "2h",
        "cooldown": "15m",
        "limits": {"concurrency": "off", "rate": "off", "idle_timeout": "off"},
        "organizations": [{"name": "Acme", "plan": "enterprise"}],
        "sessions": {"length": {"kind": "lognormal", "median": 120, "sigma": 0.5}, "audio": None},
        "client": {"max_attempts": 1},
        "config": {"scheduler": {"workers": workers, "worker_boot": BOOT}},
    }


def _served(workers: int = WORKERS) -> Scenario:
    return parse_scenario(
        {**_config(workers), "arrivals": [{"kind": "poisson", "rate_per_hour": RATE}]}
    )


class _Served(_Deployment):
    """The deployment after serving its own traffic: captured, then replayed against."""

    def __init__(self, scenario: Scenario) -> None:
        played = play(scenario)  # live: it answers the capture and the replay afterwards
        self.platform = played.platform
        self.key = played.organizations[0].callers[0].key.secret
        self.transport = httpx.ASGITransport(app=create_app(self.platform))
        self.wall = 0.0

    def capture(self) -> Recording:
        target = Target.in_process(self.platform, Credentials(api=self.key))
        try:
            recording, _report = capture(target, page_size=100)
        finally:
            target.close()
        return recording


def _base(tmp_path: Path) -> Path:
    """The engineer's scenario of the deployment: its limits and clients, the seed's pool and
    start-up (eight workers booting in 2 s): the calibration must find the real ones."""
    data = _config()
    data["config"] = {}
    path = tmp_path / "deployment.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _startup_quantiles(scenario: Scenario) -> np.ndarray:
    return np.asarray([startup_quantile(scenario, q) for q in QUANTILES])


@pytest.mark.req("PLAN-14", "PLAN-16")
def test_calibrate_recovers_the_start_up_and_the_pool_and_the_held_out_half_agrees(
    tmp_path: Path,
) -> None:
    served = _Served(_served())
    recording = served.capture()
    recording.write(tmp_path / "day.parquet")
    base = _base(tmp_path)
    out = tmp_path / "calibrated.yaml"
    argv = ["calibrate", str(tmp_path / "day.parquet"), "--scenario", str(base), "--holdout",
            "0.5", "--out", str(out)]  # fmt: skip
    assert cli.main(argv) == 0
    calibrated = load_scenario(out)
    # The start-up each quantile within 10 %, the pool exact.
    truth, fitted = _startup_quantiles(_served()), _startup_quantiles(calibrated)
    assert np.all(np.abs(fitted / truth - 1) < 0.10), (truth, fitted)
    assert calibrated.sim_config().scheduler.workers == WORKERS
    report = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "KS D = " in report and "n = " in report and "| 0.95 |" in report
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# avatar-sim calibrate of ") and "extends: deployment.yaml" in text
    # The held-out half, replayed against the deployment it was captured from: it agrees.
    held_out = read_recording(out.with_suffix(".holdout.parquet"))
    assert 0.4 < len(held_out) / len(recording) < 0.6
    agreed = served.replay(held_out, calibrated, tmp_path / "same", replications=10)
    assert agreed.exit_code == 0, agreed.comparison.to_string()
    errors = agreed.comparison.set_index("metric")["error_percent"]
    assert abs(errors["sessions_started"]) < 15  # the fidelity error, in percent
    # Against a deployment with a third fewer workers: it does not.
    fewer = _Deployment(_served(WORKERS * 2 // 3), seed=17)
    differs = fewer.replay(held_out, calibrated, tmp_path / "fewer", replications=10)
    assert differs.exit_code == 1 and "no_capacity" in " ".join(differs.disagreeing)


@pytest.mark.req("PLAN-14")
def test_a_capture_without_queueing_says_the_pool_is_not_shown(tmp_path: Path) -> None:
    """An ample pool: nothing waited, so the capture bounds the pool from below only, and the
    overlay leaves the base's size alone; the standalone overlay is a whole scenario that runs."""
    served = _Served(_served(workers=40))
    calibration = calibrate(served.capture(), replications=2)
    assert calibration.pool.workers is None and calibration.pool.at_least >= 4
    assert any("no queueing" in note for note in calibration.notes)
    overlay = calibration.overlay(None)
    assert "workers" not in overlay["config"]["scheduler"]
    assert all(a["estimated_from_days"] == 1 for a in overlay["arrivals"])
    (tmp_path / "alone.yaml").write_text(json.dumps(overlay), encoding="utf-8")
    assert cli.main(["run", str(tmp_path / "alone.yaml"), "--out", str(tmp_path / "run"),
                     "--no-figures"]) == 0  # fmt: skip


@pytest.mark.req("PLAN-14")
def test_calibrate_refuses_what_it_cannot_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    few = tmp_path / "few.csv"
    few.write_text("offset_seconds\n0\n60\n", encoding="utf-8")
    assert cli.main(["calibrate", str(few), "--out", str(tmp_path / "c.yaml")]) == 2
    assert "at least 10 are needed" in capsys.readouterr().err
    assert cli.main(["calibrate", str(few), "--out", "c.yaml", "--holdout", "1.5"]) == 2
    assert "hold-out" in capsys.readouterr().err
    assert not (tmp_path / "c.yaml").exists()


@pytest.mark.slow
@pytest.mark.req("PLAN-14", "PLAN-15", "PLAN-16")
def test_capture_calibrate_and_replay_a_served_simulator_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real time, a few minutes: ``avatar-sim serve --scenario`` plays the traffic on a fast
    clock; ``capture``, ``calibrate --holdout 0.5`` and ``replay`` of the held-out half run on
    the command line: the pool exact, every start-up quantile within 10 %, the replay against
    that server exit 0, against one serving a third fewer workers exit 1."""
    import time

    from tests.serve.support import served

    factor = "0.02"
    served_file = tmp_path / "served.yaml"
    served_file.write_text(
        yaml.safe_dump({**_config(), "arrivals": [{"kind": "poisson", "rate_per_hour": RATE}]}),
        encoding="utf-8",
    )
    base = _base(tmp_path)
    out = tmp_path / "calibrated.yaml"
    with served(tmp_path, "--time-factor", factor, "--scenario", str(served_file)) as server:
        key = server.keys["organizations"][0]["keys"]["unrestricted"]
        scenario = load_scenario(served_file)
        with server.client() as client:  # the traffic and its cool-down served
            while True:
                clock = client.get("/_sim/clock", headers=server.admin_headers).json()
                if clock["seconds"] >= scenario.duration + scenario.cooldown:
                    break
                time.sleep(1.0)
        capture = ["capture", "--base-url", server.base_url, "--api-key", key, "--out",
                   str(tmp_path / "day.parquet"), "--time-factor", factor]  # fmt: skip
        assert cli.main(capture) == 0
        assert cli.main(["calibrate", str(tmp_path / "day.parquet"), "--scenario", str(base),
                         "--holdout", "0.5", "--out", str(out)]) == 0  # fmt: skip
        calibrated = load_scenario(out)
        assert calibrated.sim_config().scheduler.workers == WORKERS
        truth, fitted = _startup_quantiles(_served()), _startup_quantiles(calibrated)
        assert np.all(np.abs(fitted / truth - 1) < 0.10), (truth, fitted)
        replay = ["replay", str(out.with_suffix(".holdout.parquet")), "--base-url",
                  server.base_url, "--api-key", key, "--time-factor", factor, "--scenario",
                  str(out), "--out", str(tmp_path / "same")]  # fmt: skip
        assert cli.main(replay) == 0
        assert capsys.readouterr().out.strip().splitlines()[-1].startswith("replay: agrees")
        server.stop()
    fewer_file = tmp_path / "fewer.yaml"
    fewer_file.write_text(yaml.safe_dump({**_config(WORKERS * 2 // 3)}), encoding="utf-8")
    (tmp_path / "fewer").mkdir()
    options = ("--time-factor", factor, "--scenario", str(fewer_file))
    with served(tmp_path / "fewer", *options) as fewer:
        key = fewer.keys["organizations"][0]["keys"]["unrestricted"]
        replay = ["replay", str(out.with_suffix(".holdout.parquet")), "--base-url",
                  fewer.base_url, "--api-key", key, "--time-factor", factor, "--scenario",
                  str(out), "--out", str(tmp_path / "fewer-out")]  # fmt: skip
        assert cli.main(replay) == 1
        assert "replay: DISAGREES" in capsys.readouterr().out
        fewer.stop()
