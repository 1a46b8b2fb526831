"""Requirement traceability: which passing tests prove which requirement ids.

Why: a requirement is done only when a passing test names it (``@pytest.mark.req``). The pytest
plugin (``harness.trace.markers``) writes the outcome of every test with the ids it names to a
results file (``--req-report PATH``); this module reads that file, joins it with the catalog
(``spec/requirements.yaml``) and prints every id, in catalog order, with the tests that prove it.
``avatar-sim trace PATH`` (``harness.trace.command``) ends with the line ``N of M requirement
ids proven``.

The results file format is defined here (not in the plugin) so that reading it never imports
pytest, and so writer and reader cannot drift apart::

    {"version": 1, "exitstatus": 0,
     "summary": {"passed": 1, "failed": 0, "skipped": 0, "error": 0},
     "tests": [{"nodeid": "tests/x.py::test_y", "outcome": "passed", "req": ["SIM-1"]}]}

``outcome`` is ``passed`` only if setup, call and teardown all passed; ``error`` means setup or
teardown failed; an expected failure (xfail) counts as ``skipped``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, get_args

from harness.trace.catalog import Catalog, Kind, Requirement

__all__ = [
    "OUTCOMES",
    "REPORT_VERSION",
    "Outcome",
    "RecordedTest",
    "ReportError",
    "ResultsReport",
    "TraceRow",
    "build_trace",
    "read_report",
    "render_trace",
    "report_document",
    "write_report",
]

REPORT_VERSION: Final = 1

Outcome = Literal["passed", "failed", "skipped", "error"]
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)

DEFAULT_SHOWN: Final = 3
"""How many proving tests a row names before abbreviating (``--all`` shows every one)."""


@dataclass(frozen=True, slots=True)
class RecordedTest:
    """One test's final outcome and the requirement ids it names."""

    nodeid: str
    outcome: Outcome
    req: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResultsReport:
    """The content of a results file."""

    tests: tuple[RecordedTest, ...]
    exitstatus: int | None = None


class ReportError(ValueError):
    """The results file is missing or malformed."""


def report_document(tests: Iterable[RecordedTest], exitstatus: int | None) -> dict[str, object]:
    """The JSON document of a results file."""
    recorded = list(tests)
    summary = {
        outcome: sum(1 for test in recorded if test.outcome == outcome) for outcome in OUTCOMES
    }
    return {
        "version": REPORT_VERSION,
        "exitstatus": exitstatus,
        "summary": summary,
        "tests": [
            {"nodeid": test.nodeid, "outcome": test.outcome, "req": list(test.req)}
            for test in recorded
        ],
    }


def write_report(path: Path, tests: Iterable[RecordedTest], exitstatus: int | None) -> None:
    """Write a results file, creating its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report_document(tests, exitstatus), indent=2) + "\n"
    path.write_text(text, encoding="utf-8")


def read_report(path: Path) -> ResultsReport:
    """Read and validate a results file; ``ReportError`` names what is wrong."""
    try:
        document: object = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"{path}: results file not found") from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read results: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("tests"), list):
        raise ReportError(f"{path}: expected a JSON object with a 'tests' list")
    version = document.get("version", REPORT_VERSION)
    if version != REPORT_VERSION:
        raise ReportError(f"{path}: unsupported results version {version!r}")
    tests: list[RecordedTest] = []
    for index, entry in enumerate(document["tests"]):
        label = f"{path}: tests[{index}]"
        if not isinstance(entry, dict):
            raise ReportError(f"{label}: expected an object")
        nodeid, outcome, req = entry.get("nodeid"), entry.get("outcome"), entry.get("req", [])
        if not isinstance(nodeid, str) or not nodeid:
            raise ReportError(f"{label}: 'nodeid' must be a non-empty string")
        if outcome not in OUTCOMES:
            raise ReportError(f"{label}: 'outcome' {outcome!r} is not one of {', '.join(OUTCOMES)}")
        if not isinstance(req, list) or not all(isinstance(item, str) for item in req):
            raise ReportError(f"{label}: 'req' must be a list of strings")
        tests.append(RecordedTest(nodeid, outcome, tuple(req)))
    exitstatus = document.get("exitstatus")
    return ResultsReport(tuple(tests), exitstatus if isinstance(exitstatus, int) else None)


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One requirement with the tests that name it, split by whether they passed."""

    requirement: Requirement
    passing: tuple[str, ...]
    not_passing: tuple[RecordedTest, ...]

    @property
    def proven(self) -> bool:
        return bool(self.passing)


def build_trace(catalog: Catalog, report: ResultsReport) -> tuple[list[TraceRow], list[str]]:
    """Rows in catalog order, and the ids the report names that the catalog does not know."""
    passing: dict[str, list[str]] = {}
    not_passing: dict[str, list[RecordedTest]] = {}
    unknown: dict[str, None] = {}
    for test in report.tests:
        for requirement_id in dict.fromkeys(test.req):
            if requirement_id not in catalog:
                unknown[requirement_id] = None
            elif test.outcome == "passed":
                passing.setdefault(requirement_id, []).append(test.nodeid)
            else:
                not_passing.setdefault(requirement_id, []).append(test)
    rows = [
        TraceRow(
            requirement,
            tuple(passing.get(requirement.id, ())),
            tuple(not_passing.get(requirement.id, ())),
        )
        for requirement in catalog
    ]
    return rows, sorted(unknown)


def _abbreviate(items: Sequence[str], shown: int | None) -> str:
    if shown is None or len(items) <= shown:
        return ", ".join(items)
    return ", ".join(items[:shown]) + f", ... (+{len(items) - shown} more)"


def render_trace(rows: Sequence[TraceRow], *, shown: int | None = DEFAULT_SHOWN) -> list[str]:
    """The table, section by section in catalog order, then per-kind counts and the total line."""
    id_width = max([len("id"), *(len(row.requirement.id) for row in rows)])
    status_width = len("UNPROVEN")
    lines = [f"{'id':<{id_width}}  kind  {'status':<{status_width}}  tests"]
    section: str | None = None
    for row in rows:
        if row.requirement.section != section:
            section = row.requirement.section
            lines.append(f"-- {section}")
        if row.proven:
            status, tests = "ok", _abbreviate(row.passing, shown)
        else:
            status = "UNPROVEN"
            if row.not_passing:
                named = [f"{test.nodeid} [{test.outcome}]" for test in row.not_passing]
                tests = "no passing test; named by " + _abbreviate(named, shown)
            else:
                tests = "no test names it"
        kind = row.requirement.kind.value
        lines.append(
            f"{row.requirement.id:<{id_width}}  {kind:<4}  {status:<{status_width}}  {tests}"
        )
    per_kind = []
    for kind in Kind:
        of_kind = [row for row in rows if row.requirement.kind is kind]
        if of_kind:
            proven = sum(row.proven for row in of_kind)
            per_kind.append(f"{kind.value} {proven}/{len(of_kind)}")
    lines.append("by kind: " + ", ".join(per_kind))
    lines.append(f"{sum(row.proven for row in rows)} of {len(rows)} requirement ids proven")
    return lines
