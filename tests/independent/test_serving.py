"""The service on a real port: its timers fire on a scaled clock, and the launcher behaves."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.independent.client import session_body
from tests.independent.faults import FAULTS
from tests.independent.serving import serve

ROOT = Path(__file__).resolve().parents[2]
TIME_FACTOR = 0.05  # the service's clock runs 20x faster than the wall


def poll_statuses(
    client: httpx.Client, sid: str, until: str, wall_timeout: float = 20.0
) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + wall_timeout
    while time.monotonic() < deadline:
        status = client.get(f"/v1/sessions/{sid}").json()["status"]
        if not seen or seen[-1] != status:
            seen.append(status)
        if status == until:
            return seen
        time.sleep(0.005)
    raise AssertionError(f"{sid} never reached {until}: {seen}")


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", ["a", "b"])
def test_sessions_run_through_their_timers_on_a_fast_clock(reading: str) -> None:
    with serve(reading, time_factor=TIME_FACTOR, workers=2) as creds:
        assert creds["base_url"].startswith("http://127.0.0.1:")
        headers = {"Authorization": f"Bearer {creds['api_key']}"}
        with httpx.Client(base_url=creds["base_url"], headers=headers, timeout=10) as client:
            r = client.post("/v1/sessions", json=session_body(idle_timeout_seconds=5))
            assert r.status_code in (200, 201), r.text
            seen = poll_statuses(client, r.json()["id"], "ended")
            order = ["queued", "starting", "running", "ended"]  # polling may skip a state
            assert seen == sorted(seen, key=order.index) and seen[0] == "queued"
            ended = client.get(f"/v1/sessions/{r.json()['id']}").json()
            assert ended["first_frame_at"] and ended["usage"]["billable_seconds"] == 5  # idled out

            r = client.post("/v1/sessions", json=session_body(idle_timeout_seconds=600))
            sid = r.json()["id"]
            poll_statuses(client, sid, "running")
            time.sleep(3 * TIME_FACTOR)  # bill a few seconds before ending it
            assert client.post(f"/v1/sessions/{sid}/end").json()["status"] == "ending"
            assert poll_statuses(client, sid, "ended")[-1] == "ended"
            usage = client.get("/v1/usage").json()
            assert usage["sessions"] == 2 and usage["billable_seconds"] >= 5


def launch(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.independent", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.req("HAR-12")
def test_the_launcher_prints_credentials_and_serves(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    proc = launch(
        "--port", "0", "--reading", "b", "--fault", "idle_timeout_default_60",
        "--time-factor", "0.5", "--workers", "3", "--keys-out", str(keys),
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        info: dict[str, Any] = json.loads(proc.stdout.readline())
        assert info == json.loads(keys.read_text())
        assert info["reading"] == "b" and info["faults"] == ["idle_timeout_default_60"]
        assert info["time_factor"] == 0.5 and info["media_model"] in info["models"]
        for key in ("api_key", "other_org_key", "runs_read_key", "runs_write_key", "revoked_key"):
            assert info[key].startswith("sk_live_")
        assert set(info["run_json"]) == {"input"}
        with httpx.Client(base_url=info["base_url"], timeout=10) as client:
            auth = {"Authorization": f"Bearer {info['api_key']}"}
            assert client.get("/v1/models", headers=auth).status_code == 200
            revoked = {"Authorization": f"Bearer {info['revoked_key']}"}
            assert client.get("/v1/models", headers=revoked).status_code == 401
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
    assert proc.returncode == 0


@pytest.mark.req("HAR-12")
def test_the_launcher_lists_faults_and_refuses_unknown_names() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "tests.independent", "--list-faults"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    names = [json.loads(line)["name"] for line in listed.stdout.splitlines()]
    assert names == list(FAULTS)
    for bad in (["--fault", "no_such_fault"], ["--reading", "c"]):
        proc = launch("--port", "0", *bad)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and "unknown" in err
