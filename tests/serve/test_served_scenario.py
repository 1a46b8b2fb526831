"""``avatar-sim serve --scenario FILE``: the scenario's config, organizations and traffic, served.

The scenario's arrivals are processes on the served platform's clock, so background sessions
appear as the clock advances, here through the admin clock of a ``--manual-clock`` server.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.scenarios import load_scenario

from .support import served

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "scenarios" / "default.yaml"


@pytest.mark.req("SIM-8", "NB-1")
def test_a_served_scenario_brings_its_organizations_and_traffic(tmp_path: Path) -> None:
    scenario = load_scenario(SCENARIO)
    with served(tmp_path, "--manual-clock", "--scenario", str(SCENARIO)) as server:
        organizations = server.keys["organizations"]
        assert [o["plan"] for o in organizations] == [o.plan for o in scenario.organizations]
        assert all(
            set(o["keys"]) == {"unrestricted", "runs_read", "runs_write", "revoked"}
            for o in organizations
        )
        with server.client() as client:
            key = organizations[0]["keys"]["unrestricted"]
            headers = {"Authorization": f"Bearer {key}"}
            assert client.get("/v1/sessions", headers=headers).json()["data"] == []
            advanced = client.post(
                "/_sim/clock/advance", json={"seconds": 1800}, headers=server.admin_headers
            )
            assert advanced.status_code == 200
            listed = client.get("/v1/sessions", params={"limit": 100}, headers=headers).json()
            assert listed["data"], "the scenario's clients created sessions as the clock moved"
            # Its configuration is served too (default.yaml sets eight workers).
            assert client.get("/v1/status").status_code == 200
        code, _ = server.stop()
        assert code == 0


@pytest.mark.req("NB-1")
def test_an_invalid_scenario_is_refused_naming_the_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "seed: 1\nduration: 1h\norganizations:\n  - {name: A, plan: gold}\n", encoding="utf-8"
    )
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "serve", "--port", "0", "--scenario", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "organizations[0].plan" in completed.stderr
