"""The shipped example suite, and a suite written from the README and the reference page alone,
pass unchanged in process, on served simulators of their own in parallel, and by URL against
``avatar-sim serve --time-factor 0.05`` (HAR-7, HAR-29, HAR-27, HAR-20, HAR-25).

They are run as a user runs them: ``avatar-sim examples DIR --tests-only`` writes the example
suite into a project of its own, the docs suite (``suites/lifecycle_from_docs.py``) and a file of
fixture checks (``suites/target_fixtures.py``) are copied beside it unchanged, then pytest runs in
a subprocess with only the plugin's options. One project serves every mode, so each mode costs
one run. With ``--avatar-sim-serve -n 2`` a conftest (the project's own, not the suites') writes
down which worker ran each test against which URL: two workers, two served simulators.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from harness.examples import suite_files
from tests.serve.support import served

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-7", "HAR-29")

SUITES = Path(__file__).resolve().parent / "suites"
NEEDS_THE_CONTROLS = (
    "queued_cancels", "clamped", "no_capacity", "audio_keeps", "full_queue", "webhooks_follow",
    "dead_webhook",
)  # fmt: skip
#: The project's own conftest for the parallel run: who ran what, where.
WHO = """
import json, os
import pytest

@pytest.fixture(autouse=True)
def _who(request, sim_target):
    yield
    with open("who.jsonl", "a") as out:
        out.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER"), sim_target.base_url]) + "\\n")
"""


def _project(pytester: pytest.Pytester) -> dict[str, int]:
    """The example suite (by the command), the docs suite and the fixture checks, each copied
    unchanged into ``tests/``; the number of tests of each."""
    assert cli.main(["examples", str(pytester.path), "--force", "--tests-only"]) == 0
    assert sorted(p.name for p in pytester.path.iterdir()) == ["tests"]  # the suite alone
    copied = pytester.path / "tests" / "test_session_lifecycle.py"
    assert copied.read_bytes() == suite_files()[0].read_bytes()
    counts = {"examples": copied.read_text(encoding="utf-8").count("\ndef test_")}
    for name in ("lifecycle_from_docs", "target_fixtures"):
        text = (SUITES / f"{name}.py").read_text(encoding="utf-8")
        (pytester.path / "tests" / f"test_{name}.py").write_text(text, encoding="utf-8")
        counts[name] = text.count("\ndef test_")
    return counts


def _run(pytester: pytest.Pytester, *options: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("tests", "-p", "no:cacheprovider", "-rs", *options)


def test_the_suites_pass_in_process(pytester: pytest.Pytester) -> None:
    counts = _project(pytester)
    assert counts["examples"] >= 12 and counts["lifecycle_from_docs"] == 14
    result = _run(pytester)
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=sum(counts.values()))


@pytest.mark.req("HAR-27", "HAR-20", "HAR-25")
def test_the_suites_pass_in_parallel_on_served_simulators_of_their_own(
    pytester: pytest.Pytester,
) -> None:
    counts = _project(pytester)
    pytester.makeconftest(WHO)
    result = _run(pytester, "-n", "2", "--dist", "loadfile", "--avatar-sim-serve")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=sum(counts.values()))
    seen = [json.loads(line) for line in (pytester.path / "who.jsonl").read_text().splitlines()]
    urls_of: dict[str, set[str]] = {}
    for worker, url in seen:
        urls_of.setdefault(worker, set()).add(url)
    assert len(urls_of) == 2, urls_of  # both workers ran tests
    assert all(len(urls) == 1 for urls in urls_of.values())  # one server each, for the run
    assert len({url for urls in urls_of.values() for url in urls}) == 2  # not the same one


@pytest.mark.req("HAR-20", "HAR-25")
def test_the_suites_pass_against_a_served_simulator_by_url(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    counts = _project(pytester)
    with served(tmp_path, "--time-factor", "0.05") as server:
        key = server.org("enterprise")["keys"]["unrestricted"]
        token = server.keys["admin_token"]
        url = ("--avatar-sim-base-url", server.base_url, "--avatar-sim-api-key", key)
        result = _run(pytester, *url, "--avatar-sim-admin-token", token)
        assert result.ret == 0, result.stdout.str()[-3000:]
        result.assert_outcomes(passed=sum(counts.values()))
        # Without the token the server is a deployment to the suite: what needs the controls
        # is skipped, and says why.
        chosen = " or ".join(NEEDS_THE_CONTROLS)
        without = _run(pytester, *url, "-k", f"test_session_lifecycle and ({chosen})")
        without.assert_outcomes(skipped=len(NEEDS_THE_CONTROLS))
        without.stdout.fnmatch_lines(["*needs the simulator's admin API*"])
