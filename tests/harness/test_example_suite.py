"""The example suite that ``avatar-sim examples DIR`` copies to ``DIR/tests`` passes unchanged in
process and against ``avatar-sim serve --time-factor 0.05`` by URL (HAR-7).

It is run as a user runs it: copied by the command into a project of its own, then pytest in a
subprocess with only the plugin's options. Against the served simulator every test runs (none is
skipped: the admin token gives them the controls and the events with reasons); without the token
the tests that need the controls are skipped, saying so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import cli
from harness.examples import suite_files
from tests.serve.support import Served, served

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-7")

NEEDS_THE_CONTROLS = (
    "queued_cancels", "clamped", "no_capacity", "audio_keeps", "full_queue", "webhooks_follow",
    "dead_webhook",
)  # fmt: skip


def _copy(pytester: pytest.Pytester) -> int:
    """Copy the example suite alone into the pytester project; the number of example tests."""
    assert cli.main(["examples", str(pytester.path), "--force", "--tests-only"]) == 0
    copied = pytester.path / "tests" / "test_session_lifecycle.py"
    assert copied.read_bytes() == suite_files()[0].read_bytes()
    assert sorted(p.name for p in pytester.path.iterdir()) == ["tests"]  # the suite alone
    return copied.read_text(encoding="utf-8").count("\ndef test_")


def _by_url(pytester: pytest.Pytester, server: Served, *extra: str) -> pytest.RunResult:
    key = server.org("enterprise")["keys"]["unrestricted"]
    return pytester.runpytest_subprocess(
        "tests", "-p", "no:cacheprovider", "-rs",
        "--avatar-sim-base-url", server.base_url,
        "--avatar-sim-api-key", key,
        *extra,
    )  # fmt: skip


@pytest.mark.req("HAR-29")
def test_the_example_suite_passes_in_process(pytester: pytest.Pytester) -> None:
    count = _copy(pytester)
    assert count >= 12
    result = pytester.runpytest_subprocess("tests", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=count)


@pytest.mark.req("HAR-27", "HAR-20")
def test_the_example_suite_passes_in_parallel_on_served_simulators_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    count = _copy(pytester)
    result = pytester.runpytest_subprocess(
        "tests", "-p", "no:cacheprovider", "-n", "2", "--avatar-sim-serve"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=count)
    # Each worker ran against a server of its own: two workers, two served simulators.
    assert "2 workers" in result.stdout.str()


def test_the_example_suite_passes_against_a_served_simulator_by_url(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    count = _copy(pytester)
    with served(tmp_path, "--time-factor", "0.05") as server:
        token = server.keys["admin_token"]
        result = _by_url(pytester, server, "--avatar-sim-admin-token", token)
        assert result.ret == 0, result.stdout.str()[-3000:]
        result.assert_outcomes(passed=count)
        # Without the token the server is a deployment to the suite: what needs the controls
        # is skipped, and says why.
        without = _by_url(pytester, server, "-k", " or ".join(NEEDS_THE_CONTROLS))
        without.assert_outcomes(skipped=len(NEEDS_THE_CONTROLS))
        without.stdout.fnmatch_lines(["*needs the simulator's admin API*"])
