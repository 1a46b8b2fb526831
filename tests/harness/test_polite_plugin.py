"""Installing avatar-sim changes nothing for a project that does not ask for it (HAR-4).

The plugin loads into every pytest run on a machine where avatar-sim is installed. A project of
its own, with its own ``req`` marker (other arguments, other meaning), ``--strict-markers`` and
even its own ``--req-report`` option, must run exactly as without avatar-sim; the fixtures and
their namespaced options stay available; the requirement checks apply only where the pytest
configuration names a catalog (``avatar_sim_requirements``), as avatar-sim's own does.
"""

from __future__ import annotations

import re

import pytest

from harness.trace.catalog import catalog_path
from harness.trace.markers import INI_OPTION, requirements_file

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-4")

#: A project with its own ``req`` marker: a ticket name, positional or keyword, or none at all.
FOREIGN_CONFTEST = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--req-report", action="store_true", help="our own report flag")

def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in item.iter_markers("req"):
            item.user_properties.append(("ticket", mark.kwargs.get("name", mark.args)))
"""

FOREIGN_TESTS = """
import pytest

@pytest.mark.req("ticket-42")
def test_lowercase_ticket():
    pass

@pytest.mark.req(name="JIRA-7")
def test_keyword_ticket():
    pass

@pytest.mark.req
def test_bare_marker(request):
    assert request.config.getoption("req_report") is True
"""


@pytest.fixture
def foreign(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(
        """
        [pytest]
        markers =
            req(name): the ticket this test covers (our own meaning)
        """
    )
    pytester.makeconftest(FOREIGN_CONFTEST)
    pytester.makepyfile(test_foreign=FOREIGN_TESTS)
    return pytester


def test_a_foreign_req_marker_and_option_are_left_alone(foreign: pytest.Pytester) -> None:
    result = foreign.runpytest("--strict-markers", "--strict-config", "--req-report")
    result.assert_outcomes(passed=3)
    assert "requirement results" not in result.stdout.str()
    markers = foreign.runpytest("--markers").stdout.str()
    assert "req(name): the ticket this test covers" in markers
    assert "avatar-sim catalog" not in markers


def test_options_sit_under_an_avatar_sim_heading(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    heading = help_text.index("\navatar-sim:\n")
    section = help_text[heading : help_text.index("\n\n", heading + 1)]
    assert "--avatar-sim-base-url" in section
    assert "--avatar-sim-api-key" in section
    assert "--avatar-sim-admin-token" in section
    assert not re.search(r"^\s+--req-report", help_text, re.M)  # not opted in: no such option
    assert "traceability" not in help_text.lower()
    assert INI_OPTION in help_text  # the one switch a project may set


def test_fixtures_work_and_load_nothing_until_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(  # the files run in name order: the light one first
        test_1_light="""
        import sys

        def test_plugin_loaded_no_simulator():
            assert not [m for m in sys.modules if m == "sim" or m.startswith("sim.")]
            # nor the state-transition toolkit beyond its fixtures
            heavy = ("machine", "events", "waiting", "receiver", "audio")
            assert not [m for m in heavy if f"harness.testing.{m}" in sys.modules]
        """,
        test_2_fixtures="""
        def test_client_and_clock(api_client, sim_clock):
            assert api_client.get("/v1/models").status_code == 200
            sim_clock.advance(1)
            assert sim_clock.now == 1
        """,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    usage = pytester.runpytest("--avatar-sim-base-url", "http://127.0.0.1:9")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR


def test_a_project_opts_in_with_its_own_catalog(pytester: pytest.Pytester) -> None:
    (pytester.path / "reqs").mkdir()
    (pytester.path / "reqs" / "catalog.yaml").write_text(
        "requirements:\n"
        "  - {id: APP-1, kind: S, section: App, summary: The app answers its health check.}\n",
        encoding="utf-8",
    )
    pytester.makeini(f"[pytest]\n{INI_OPTION} = reqs/catalog.yaml\n")
    pytester.makepyfile(
        test_app="""
        import pytest

        @pytest.mark.req("APP-1")
        def test_known():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers", "--req-report", "out.json")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out.json").is_file()
    pytester.makepyfile(
        test_unknown="""
        import pytest

        @pytest.mark.req("SIM-1")
        def test_not_in_this_catalog():
            pass
        """
    )
    refused = pytester.runpytest()
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*unknown requirement id 'SIM-1'*reqs*catalog.yaml*"])


def test_avatar_sim_itself_opts_in(pytestconfig: pytest.Config) -> None:
    """Our own suite names our catalog, so its ids are checked and ``make trace`` has a report."""
    assert requirements_file(pytestconfig) == catalog_path()
    assert pytestconfig.pluginmanager.has_plugin("avatar-sim-traceability")
