"""Mistakes surface at once, once, naming the option (HAR-23, HAR-24).

A wrong admin token, a wrong key and a URL where nothing listens each end the run before any
test, with pytest's usage-error code and one line naming the option at fault; a status no session
ever has is refused before any waiting, and the helpers' own frames stay out of the traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import InProcessAdmin, UnknownStatus, wait_for, wait_for_delivery
from sim.platform import Platform
from tests.serve.support import Served, served

pytest_plugins = ["pytester"]

SUITE = """
from harness.testing import wait_for

def test_one(api_client):
    assert api_client.get("/v1/sessions").status_code == 200

def test_two(api_client):
    wait_for(api_client, "sess_x", "running", within=1)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(Path(tmp_path_factory.mktemp("fail_fast")), "--manual-clock") as running:
        yield running


def _run(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    pytester.makepyfile(test_suite=SUITE)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *options)


def _one_line_naming(result: pytest.RunResult, option: str) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR == 4
    said = [line for line in result.errlines if line.strip()]
    assert len(said) == 1, said
    assert option in said[0]
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    return said[0]


@pytest.mark.req("HAR-23")
def test_a_wrong_key_ends_the_run_naming_the_option(
    pytester: pytest.Pytester, server: Served
) -> None:
    result = _run(
        pytester, "--avatar-sim-base-url", server.base_url, "--avatar-sim-api-key", "sk_live_no"
    )
    assert "refused the key" in _one_line_naming(result, "--avatar-sim-api-key")


@pytest.mark.req("HAR-23")
def test_a_wrong_admin_token_ends_the_run_naming_the_option(
    pytester: pytest.Pytester, server: Served
) -> None:
    key = server.org("enterprise")["keys"]["unrestricted"]
    result = _run(
        pytester,
        "--avatar-sim-base-url", server.base_url,
        "--avatar-sim-api-key", key,
        "--avatar-sim-admin-token", "simadmin_wrong",
    )  # fmt: skip
    assert "refused the admin token" in _one_line_naming(result, "--avatar-sim-admin-token")


@pytest.mark.req("HAR-23")
def test_a_dead_url_ends_the_run_naming_the_option(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester, "--avatar-sim-base-url", "http://127.0.0.1:9", "--avatar-sim-api-key", "sk_x"
    )
    assert "nothing answers" in _one_line_naming(result, "--avatar-sim-base-url")


@pytest.mark.req("HAR-23")
def test_the_run_goes_on_when_everything_answers(pytester: pytest.Pytester, server: Served) -> None:
    key = server.org("enterprise")["keys"]["unrestricted"]
    token = server.keys["admin_token"]
    result = _run(
        pytester,
        "--avatar-sim-base-url", server.base_url,
        "--avatar-sim-api-key", key,
        "--avatar-sim-admin-token", token,
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)  # test_two waits for a session that is not there


@pytest.mark.req("HAR-23", "HAR-27")
def test_serving_and_a_url_together_are_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--avatar-sim-serve", "--avatar-sim-base-url", "http://x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--avatar-sim-serve starts its own simulator*"])


@pytest.mark.req("HAR-24")
def test_a_misspelled_status_fails_at_once_naming_the_right_one() -> None:
    platform = Platform.create()
    admin = InProcessAdmin(platform)
    org = admin.create_organization()
    with admin.client(org["keys"]["unrestricted"]) as client:
        body = {
            "avatar_id": "av_stock_mock",
            "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"},
        }
        created = client.post("/v1/sessions", json=body).json()
        with pytest.raises(UnknownStatus, match=r"never 'runing' \(did you mean 'running'\?\)"):
            wait_for(client, created["id"], "runing", within=30)
        assert platform.clock.now == 0  # nothing waited
        with pytest.raises(UnknownStatus, match="'succeded'"):
            wait_for_delivery(admin, org["id"], "succeded")


@pytest.mark.req("HAR-24")
def test_a_misspelled_status_fails_at_once_by_url(server: Served) -> None:
    key = server.org("enterprise")["keys"]["unrestricted"]
    from harness.testing import HttpAdmin

    with HttpAdmin(server.base_url, server.keys["admin_token"]) as admin:
        before = admin.now()
        with admin.client(key) as client, pytest.raises(UnknownStatus, match="'runing'"):
            wait_for(client, "sess_any", "runing", within=30)
        assert admin.now() == before


@pytest.mark.req("HAR-24")
def test_the_helpers_hide_their_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_hidden="""
        from harness.testing import create_session, wait_for

        def test_never(api_client, sim_admin):
            sim_admin.set_capacity(0)
            created = create_session(api_client, {
                "avatar_id": "av_stock_mock",
                "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"},
            }).json()
            wait_for(api_client, created["id"], "running", within=5)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "StateNotReached" in text and "never became running" in text
    assert "waiting.py" not in text  # the test's own line is where it points
