"""Requirement markers under pytest: validate ``@pytest.mark.req`` and record outcomes.

Why: tests prove requirements by naming their ids (``@pytest.mark.req("SES-ST-2", "EV-1")``). A
misspelt or stale id would prove nothing while looking fine, so every id must exist in the catalog
and a ``req`` marker must name at least one id; otherwise the run stops with a usage error that
names each offending test and id. With ``--req-report PATH`` the final outcome of every test that
ran is written as JSON (format: ``harness.trace.results``) for ``avatar-sim trace PATH``.

Only a project that asks for it gets any of this. Installing avatar-sim registers the plugin in
every pytest run on the machine, and ``req`` is a common marker name, so a project opts in by
naming its catalog in its pytest configuration (avatar-sim's own pyproject does)::

    [tool.pytest.ini_options]
    avatar_sim_requirements = "spec/requirements.yaml"

Without it the plugin adds no marker, checks nothing and has no ``--req-report`` option (that is
added in ``pytest_load_initial_conftests``, once the configuration has been read), so a project's
own ``req`` marker and options are left alone.

Validation runs on the whole collection, before ``-m``/``-k`` deselection, so a filtered run
(``make test`` deselects ``slow``) still catches a bad id anywhere in the suite.

``harness.testing.plugin`` registers this through ``add_options``, ``add_opt_in_options`` and
``configure``; nothing here is a pytest hook at module level, so the plugin module stays a thin
list of registrations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from harness.trace.catalog import CatalogError, load_catalog
from harness.trace.results import Outcome, RecordedTest, write_report

__all__ = [
    "GROUP",
    "INI_OPTION",
    "MARKER",
    "REPORT_OPTION",
    "TraceabilityPlugin",
    "add_opt_in_options",
    "add_options",
    "configure",
    "requirements_file",
]

MARKER: Final = "req"
REPORT_OPTION: Final = "--req-report"
INI_OPTION: Final = "avatar_sim_requirements"
GROUP: Final = "avatar-sim"
PLUGIN_NAME: Final = "avatar-sim-traceability"

_MARKER_LINE: Final = f"{MARKER}(*ids): the requirement ids (avatar-sim catalog) this test proves"


def add_options(parser: pytest.Parser) -> None:
    """The opt-in switch, an ini option; called from the plugin's ``pytest_addoption``."""
    parser.addini(
        INI_OPTION,
        help="avatar-sim: requirement catalog (YAML) the ids of @pytest.mark.req must be in; "
        f"setting it turns on the {MARKER} marker checks and {REPORT_OPTION}",
        default="",
    )


def requirements_file(config: pytest.Config) -> Path | None:
    """The catalog named by the ini option (relative to the ini file), or None: not opted in."""
    value = str(config.getini(INI_OPTION) or "").strip()
    if not value:
        return None
    path = Path(value)
    if path.is_absolute():
        return path
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return base / path


def add_opt_in_options(config: pytest.Config, parser: pytest.Parser) -> None:
    """``--req-report`` for a project that opted in; from ``pytest_load_initial_conftests``."""
    if requirements_file(config) is None:
        return
    parser.getgroup(GROUP, GROUP).addoption(
        REPORT_OPTION,
        metavar="PATH",
        default=None,
        help="write every test's outcome and requirement ids as JSON to PATH "
        "(read by `python -m harness trace PATH`)",
    )


def configure(config: pytest.Config) -> None:
    """In a project that opted in: the ``req`` marker and its checks; otherwise nothing."""
    catalog = requirements_file(config)
    if catalog is None or config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    # Registered here too, so that an opted-in suite that does not declare the marker still
    # passes ``--strict-markers``; a second registration of the same marker is harmless.
    config.addinivalue_line("markers", _MARKER_LINE)
    report: str | None = config.getoption(REPORT_OPTION.lstrip("-").replace("-", "_"), None)
    report_path = None
    if report is not None:
        report_path = Path(report)
        if not report_path.is_absolute():
            report_path = config.invocation_params.dir / report_path
    config.pluginmanager.register(TraceabilityPlugin(catalog, report_path), PLUGIN_NAME)


#: How a test ends, by the first phase outcome that decides it, in this order: (phase, its
#: outcome, the test's). A test passes only if every phase that ran passed.
_DECIDING: tuple[tuple[str, str, Outcome], ...] = (
    ("setup", "failed", "error"),
    ("setup", "skipped", "skipped"),
    ("call", "failed", "failed"),
    ("call", "skipped", "skipped"),
    ("teardown", "failed", "error"),
    ("call", "passed", "passed"),
)


def _final_outcome(phases: dict[str, str]) -> Outcome:
    """Fold phase outcomes into one (``_DECIDING``); a run with no call phase reported (an
    interrupted one) proves nothing: ``error``."""
    return next(
        (test for phase, outcome, test in _DECIDING if phases.get(phase) == outcome), "error"
    )


class TraceabilityPlugin:
    """Holds the per-session state: the ids each test names and the phase outcomes seen."""

    def __init__(self, catalog_path: Path, report_path: Path | None) -> None:
        self.catalog_path = catalog_path
        self.report_path = report_path
        self.req_by_nodeid: dict[str, tuple[str, ...]] = {}
        self.phases: dict[str, dict[str, str]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Read every item's ``req`` ids and stop the run on any unknown id or empty marker."""
        problems: list[str] = []
        named: dict[str, list[str]] = {}
        for item in items:
            ids: list[str] = []
            for mark in item.iter_markers(MARKER):
                if mark.kwargs:
                    problems.append(
                        f"{item.nodeid}: @pytest.mark.{MARKER} takes ids as positional strings, "
                        f"not keywords {sorted(mark.kwargs)}"
                    )
                if not mark.args:
                    problems.append(
                        f"{item.nodeid}: @pytest.mark.{MARKER}() names no requirement id"
                    )
                for arg in mark.args:
                    if isinstance(arg, str) and arg:
                        ids.append(arg)
                    else:
                        problems.append(
                            f"{item.nodeid}: @pytest.mark.{MARKER} argument {arg!r} is not an id "
                            "string (pass ids as separate strings)"
                        )
            unique = tuple(dict.fromkeys(ids))
            self.req_by_nodeid[item.nodeid] = unique
            for requirement_id in unique:
                named.setdefault(requirement_id, []).append(item.nodeid)
        if named:
            try:
                catalog = load_catalog(self.catalog_path)
            except CatalogError as exc:
                raise pytest.UsageError(f"cannot check @pytest.mark.{MARKER} ids: {exc}") from None
            for requirement_id, nodeids in named.items():
                if requirement_id not in catalog:
                    problems.extend(
                        f"{nodeid}: unknown requirement id {requirement_id!r} "
                        f"(not in {self.catalog_path})"
                        for nodeid in nodeids
                    )
        if problems:
            raise pytest.UsageError(
                f"invalid @pytest.mark.{MARKER} markers:\n  " + "\n  ".join(problems)
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.phases.setdefault(report.nodeid, {})[report.when] = report.outcome

    def recorded(self) -> list[RecordedTest]:
        """Every test that reported, in the order it first reported."""
        tests: list[RecordedTest] = []
        for nodeid, phases in self.phases.items():
            requirement_ids = self.req_by_nodeid.get(nodeid, ())
            tests.append(RecordedTest(nodeid, _final_outcome(phases), requirement_ids))
        return tests

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.report_path is not None:
            write_report(self.report_path, self.recorded(), int(exitstatus))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.report_path is not None:
            terminalreporter.write_line(f"requirement results: {self.report_path}")
