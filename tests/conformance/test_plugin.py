"""HAR-4: the pytest plugin's fixtures, in-process and against a base URL (run with pytester)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serve.support import served

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-4")

SUITE = """
import pytest

def test_create_and_read_a_session(api_client):
    created = api_client.post("/v1/sessions", json={
        "avatar_id": "av_stock_mock",
        "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r1"},
    })
    assert created.status_code // 100 == 2, created.text
    fetched = api_client.get(f"/v1/sessions/{created.json()['id']}")
    assert fetched.json()["status"] == "queued"

def test_the_clock_moves_the_session(sim_platform, sim_clock, sim_org, api_client):
    assert sim_platform.clock is sim_clock
    assert set(sim_org["keys"]) == {"unrestricted", "runs_read", "runs_write", "revoked"}
    created = api_client.post("/v1/sessions", json={
        "avatar_id": "av_stock_mock",
        "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r1"},
    }).json()
    before = sim_clock.now
    sim_clock.advance(3600)
    assert sim_clock.now == before + 3600
    status = api_client.get(f"/v1/sessions/{created['id']}").json()["status"]
    assert status in {"ended", "failed"}
"""


def test_fixtures_run_in_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_each_test_gets_a_fresh_simulator(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fresh="""
        import pytest

        @pytest.mark.parametrize("run", [1, 2])
        def test_alone(run, api_client, sim_clock):
            assert api_client.get("/v1/sessions").json()["data"] == []
            assert sim_clock.now == 0
            api_client.post("/v1/sessions", json={
                "avatar_id": "av_stock_mock",
                "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"},
            })
            sim_clock.advance(5)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_a_base_url_without_a_key_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--avatar-sim-base-url", "http://127.0.0.1:9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--avatar-sim-base-url needs --avatar-sim-api-key*"])


def test_the_same_suite_runs_against_a_base_url(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_suite=SUITE)
    with served(tmp_path, "--manual-clock") as server:
        key = server.org("enterprise")["keys"]["unrestricted"]
        result = pytester.runpytest(
            "-p", "no:cacheprovider",
            "-rs",
            "--avatar-sim-base-url", server.base_url,
            "--avatar-sim-api-key", key,
        )  # fmt: skip
    # The client test talks to the deployment; the one that needs the simulator is skipped.
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs the in-process simulator*"])
