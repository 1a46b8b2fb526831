"""``serve_in_background``: a served simulator in a child process for a notebook or a script,
its traffic captured over HTTP, stopped as a user stops it (SIGTERM, exit 0), leaving no keys
behind."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from harness.serve.background import serve_in_background
from harness.target import Credentials, Target
from harness.traffic.capture import capture


@pytest.mark.slow  # real time (about 3 s): make test keeps one such test, capture's own
@pytest.mark.req("SIM-8", "HAR-9")
def test_a_scenario_served_in_the_background_is_captured(tmp_path: Path) -> None:
    scenario = tmp_path / "busy.yaml"
    scenario.write_text(
        "seed: 2\nduration: 1h\nlimits: {concurrency: off, rate: off}\n"
        "organizations: [{name: Acme, plan: pro}]\n"
        "arrivals: [{kind: poisson, rate_per_hour: 600}]\n",
        encoding="utf-8",
    )
    with serve_in_background(scenario=scenario, time_factor=0.0005) as server:
        assert httpx.get(f"{server.base_url}/v1/status").status_code == 200
        target = Target.url(server.base_url, Credentials(api=server.api_key()))
        with target.client:
            # The served clock runs on the wall's: on a loaded machine the child may have
            # simulated only minutes yet, so capture again (up to 30 s) until the hour's
            # traffic is under way.
            deadline = time.monotonic() + 30.0
            recording, report = capture(target, organization="Acme")
            while len(recording) <= 20 and time.monotonic() < deadline:
                time.sleep(0.5)
                recording, report = capture(target, organization="Acme")
        assert len(recording) > 20 and report.pages >= 1
        assert recording.info["plan"] == "pro"
        assert server.stop() == 0
    assert server.process.returncode == 0
    assert not server.log.parent.exists()  # the keys file and the log went with the block
