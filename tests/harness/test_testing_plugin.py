"""The plugin's state-transition fixtures and switch, in a project of their own (HAR-7, HAR-4).

``sim_admin``, ``session_events`` and ``play_audio`` work in process; against a base URL without
``--avatar-sim-admin-token`` the tests that need the simulator's controls are skipped, saying
so; the token alone is a usage error; a project's own fixtures of the same names win and are left
alone by the plugin.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.support import Served, served

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-7", "HAR-4")

SUITE = """
from harness.testing import SessionHistory, wait_for

BODY = {
    "avatar_id": "av_stock_mock",
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"},
}

def test_audio_and_events(api_client, sim_admin, play_audio, session_events):
    created = api_client.post("/v1/sessions", json={**BODY, "idle_timeout_seconds": 2}).json()
    wait_for(api_client, created["id"], "running", within=30)
    start = sim_admin.now()
    play_audio(created["id"], "speech", seconds=8)
    wait_for(api_client, created["id"], "ended", within=30)
    assert sim_admin.now() - start >= 10
    history = session_events(created["id"])
    assert isinstance(history, SessionHistory)
    assert (history.source, history.reason) == ("event_log", "idle_timeout")

def test_faults(api_client, sim_admin):
    sim_admin.set_capacity(0)
    created = api_client.post("/v1/sessions", json=BODY).json()
    failed = wait_for(api_client, created["id"], "failed", within=30)
    assert failed["error"]["code"] == "no_capacity"
    assert sim_admin.capacity()["capacity"] == 0
"""


def test_the_fixtures_work_in_process(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(Path(tmp_path_factory.mktemp("plugin")), "--manual-clock") as running:
        yield running


def test_without_an_admin_token_a_url_run_skips_what_needs_the_controls(
    pytester: pytest.Pytester, server: Served
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-rs",
        "--avatar-sim-base-url", server.base_url,
        "--avatar-sim-api-key", server.org("enterprise")["keys"]["unrestricted"],
    )  # fmt: skip
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        ["*needs the simulator's admin API*without --avatar-sim-admin-token*"]
    )


def test_an_admin_token_without_a_url_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--avatar-sim-admin-token", "simadmin_x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--avatar-sim-admin-token needs --avatar-sim-base-url*"])


def test_the_switch_is_under_the_avatar_sim_heading(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    heading = help_text.index("\navatar-sim:\n")
    section = help_text[heading : help_text.index("\n\n", heading + 1)]
    assert "--avatar-sim-admin-token" in section
    assert "sim_admin" in section  # the fixture it gives


def test_a_projects_own_fixtures_of_those_names_win(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import httpx
        import pytest

        @pytest.fixture
        def api_client():
            with httpx.Client(base_url="http://testserver") as client:
                yield client

        @pytest.fixture
        def sim_admin():
            return "ours"
        """
    )
    pytester.makepyfile(
        test_own="""
        import pytest
        from harness.testing import UnknownTarget, wait_for

        def test_own(api_client, sim_admin):
            assert sim_admin == "ours"
            with pytest.raises(UnknownTarget):  # the plugin did not bind the project's client
                wait_for(api_client, "sess_x", "running", within=1)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
