"""Requirement traceability: the catalog, the req markers, the results report, the trace CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness import cli
from harness.trace import (
    RecordedTest,
    ResultsReport,
    build_trace,
    read_report,
    render_trace,
    write_report,
)
from harness.trace.catalog import (
    CatalogError,
    Kind,
    catalog_path,
    load_catalog,
    parse_catalog,
    spec_dir,
)
from harness.trace.markers import INI_OPTION
from sim.asgi.openapi import default_spec_dir

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
SHARED_REQUIREMENTS = REPO.parent / "shared" / "requirements.md"

_ROW = re.compile(r"^\|\s*([A-Z][A-Z0-9-]*-\d+)\s*\|\s*([CGS])\s*\|")


def _shared_rows() -> list[tuple[str, str, str]]:
    """(id, kind, section) of every table row of the shared requirements document."""
    rows: list[tuple[str, str, str]] = []
    section = ""
    for line in SHARED_REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = re.sub(r"\s*\(S\)\s*$", "", line[3:].strip())
        elif match := _ROW.match(line):
            rows.append((match[1], match[2], section))
    return rows


# --- the catalog ---------------------------------------------------------------------------------


def test_catalog_lives_in_the_repository() -> None:
    assert spec_dir() == REPO / "spec"
    # The plugin's copy of the loader's rule (it must not import ``sim``) gives the same answer.
    assert spec_dir() == default_spec_dir()
    catalog = load_catalog()
    assert len(catalog) > 0
    assert catalog.ids == tuple(requirement.id for requirement in catalog)


@pytest.mark.skipif(not SHARED_REQUIREMENTS.is_file(), reason="no ../shared/requirements.md")
def test_catalog_has_every_shared_requirement_with_its_kind_and_section() -> None:
    """Every shared requirement, in order, with its kind and section; the project may add its
    own requirements (kind S only, as the team rules allow), never change or drop one."""
    shared = _shared_rows()
    catalog = load_catalog()
    known = {row[0] for row in shared}
    ours = [r for r in catalog if r.id in known]
    assert [row[0] for row in shared] == [r.id for r in ours]
    assert [(row[0], row[1]) for row in shared] == [(r.id, r.kind.value) for r in ours]
    assert [(row[0], row[2]) for row in shared] == [(r.id, r.section) for r in ours]
    assert all(r.kind.value == "S" for r in catalog if r.id not in known)


def test_catalog_summaries_are_short_single_lines() -> None:
    for requirement in load_catalog():
        assert "\n" not in requirement.summary
        assert 10 <= len(requirement.summary) <= 200, requirement.id


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({}, "top-level 'requirements:'"),
        ({"requirements": [{"id": "A-1", "kind": "C", "section": "s"}]}, "missing fields"),
        (
            {"requirements": [{"id": "A-1", "kind": "X", "section": "s", "summary": "t"}]},
            "kind 'X'",
        ),
        (
            {"requirements": [{"id": "a1", "kind": "C", "section": "s", "summary": "t"}]},
            "malformed id",
        ),
        (
            {"requirements": [{"id": "A-1", "kind": "C", "section": "s", "summary": "a\nb"}]},
            "one line",
        ),
        (
            {"requirements": [{"id": "A-1", "kind": "C", "section": "s", "summary": "t"}] * 2},
            "duplicate",
        ),
    ],
)
def test_malformed_catalogs_are_refused(document: object, message: str) -> None:
    with pytest.raises(CatalogError, match=re.escape(message)):
        parse_catalog(document)


def test_catalog_records_are_typed() -> None:
    catalog = parse_catalog(
        {"requirements": [{"id": "A-1", "kind": "G", "section": "S", "summary": "text"}]}
    )
    assert catalog["A-1"].kind is Kind.GAP
    assert "A-1" in catalog
    assert "B-1" not in catalog


# --- the pytest plugin ---------------------------------------------------------------------------


@pytest.fixture
def opted_in(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester project that asks for avatar-sim's requirement checks, naming our catalog."""
    pytester.makeini(f"[pytest]\n{INI_OPTION} = {catalog_path()}\n")
    return pytester


def test_unknown_id_fails_the_run(opted_in: pytest.Pytester) -> None:
    opted_in.makepyfile(
        test_example="""
        import pytest

        @pytest.mark.req("SIM-1")
        def test_known():
            pass

        @pytest.mark.req("SIM-1", "NO-SUCH-1")
        def test_unknown():
            pass
        """
    )
    result = opted_in.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*test_example.py::test_unknown*unknown requirement id 'NO-SUCH-1'*"]
    )
    result.assert_outcomes()  # nothing ran


def test_unknown_id_fails_even_when_its_test_is_deselected(opted_in: pytest.Pytester) -> None:
    opted_in.makepyfile(
        test_example="""
        import pytest

        def test_selected():
            pass

        @pytest.mark.req("NO-SUCH-2")
        def test_other():
            pass
        """
    )
    result = opted_in.runpytest("-k", "selected")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_other*NO-SUCH-2*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        ("@pytest.mark.req()", "names no requirement id"),
        ("@pytest.mark.req", "names no requirement id"),
        ('@pytest.mark.req(["SIM-1"])', "is not an id string"),
        ('@pytest.mark.req(id="SIM-1")', "not keywords"),
    ],
)
def test_malformed_marker_fails_the_run(
    opted_in: pytest.Pytester, marker: str, message: str
) -> None:
    opted_in.makepyfile(
        test_example=f"""
        import pytest

        {marker}
        def test_marked():
            pass
        """
    )
    result = opted_in.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_example.py::test_marked*{message}*"])


def test_report_lists_every_outcome_with_its_ids(opted_in: pytest.Pytester) -> None:
    opted_in.makepyfile(
        test_example="""
        import pytest

        @pytest.fixture
        def broken_setup():
            raise RuntimeError("setup")

        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown")

        pytestmark = pytest.mark.req("SIM-2")

        @pytest.mark.req("SIM-1", "SIM-1")
        def test_passes():
            pass

        @pytest.mark.req("SIM-3")
        def test_fails():
            assert False

        @pytest.mark.skip(reason="not today")
        def test_skipped():
            pass

        def test_skips_inside():
            pytest.skip("later")

        @pytest.mark.xfail(reason="known", strict=True)
        def test_xfails():
            assert False

        def test_setup_error(broken_setup):
            pass

        def test_teardown_error(broken_teardown):
            pass
        """
    )
    report_path = opted_in.path / "out" / "results.json"
    result = opted_in.runpytest("--req-report", "out/results.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["requirement results: *results.json"])
    document = json.loads(report_path.read_text(encoding="utf-8"))
    outcomes = {test["nodeid"].split("::")[-1]: test["outcome"] for test in document["tests"]}
    assert outcomes == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skipped": "skipped",
        "test_skips_inside": "skipped",
        "test_xfails": "skipped",
        "test_setup_error": "error",
        "test_teardown_error": "error",
    }
    req = {test["nodeid"].split("::")[-1]: test["req"] for test in document["tests"]}
    assert req["test_passes"] == ["SIM-1", "SIM-2"]
    assert req["test_fails"] == ["SIM-3", "SIM-2"]
    assert req["test_skipped"] == ["SIM-2"]
    assert document["summary"] == {"passed": 1, "failed": 1, "skipped": 3, "error": 2}
    assert document["exitstatus"] == int(pytest.ExitCode.TESTS_FAILED)
    assert read_report(report_path).tests[0] == RecordedTest(
        "test_example.py::test_passes", "passed", ("SIM-1", "SIM-2")
    )


def test_unmarked_tests_are_reported_without_ids(opted_in: pytest.Pytester) -> None:
    opted_in.makepyfile(test_example="def test_plain():\n    pass\n")
    result = opted_in.runpytest("--req-report", "results.json")
    assert result.ret == pytest.ExitCode.OK
    document = json.loads((opted_in.path / "results.json").read_text(encoding="utf-8"))
    assert document["tests"] == [
        {"nodeid": "test_example.py::test_plain", "outcome": "passed", "req": []}
    ]


# --- the trace command ---------------------------------------------------------------------------


def _synthetic_results(path: Path) -> None:
    write_report(
        path,
        [
            RecordedTest("tests/a.py::test_one", "passed", ("SIM-1", "CONV-2")),
            RecordedTest("tests/a.py::test_two", "passed", ("SIM-1",)),
            RecordedTest("tests/a.py::test_three", "failed", ("SIM-2", "CONV-2")),
            RecordedTest("tests/a.py::test_four", "skipped", ("SIM-3",)),
            RecordedTest("tests/a.py::test_five", "passed", ()),
        ],
        exitstatus=1,
    )


def test_trace_command_prints_the_proven_count(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    _synthetic_results(results)
    completed = subprocess.run(
        [sys.executable, "-m", "harness", "trace", str(results)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    total = len(load_catalog())
    assert lines[-1] == f"2 of {total} requirement ids proven"
    rows = {line.split()[0]: line for line in lines[1:] if not line.startswith("--")}
    assert "tests/a.py::test_one, tests/a.py::test_two" in rows["SIM-1"]
    assert "UNPROVEN" in rows["SIM-2"]
    assert "tests/a.py::test_three [failed]" in rows["SIM-2"]
    assert "UNPROVEN" in rows["SIM-3"]
    assert " ok " in rows["CONV-2"]
    # Every id appears, in catalog order.
    listed = [line.split()[0] for line in lines[1:-2] if not line.startswith("--")]
    assert listed == list(load_catalog().ids)


def test_trace_strict_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results.json"
    _synthetic_results(results)
    assert cli.main(["trace", "--strict", str(results)]) == 1
    assert cli.main(["trace", str(tmp_path / "missing.json")]) == 2
    assert "results file not found" in capsys.readouterr().err
    results.write_text('{"tests": [{"nodeid": "x", "outcome": "maybe"}]}', encoding="utf-8")
    assert cli.main(["trace", str(results)]) == 2
    assert "'maybe'" in capsys.readouterr().err


def test_trace_abbreviates_many_tests() -> None:
    catalog = parse_catalog(
        {"requirements": [{"id": "A-1", "kind": "S", "section": "S", "summary": "text"}]}
    )
    report = ResultsReport(
        tuple(RecordedTest(f"t.py::test_{n}", "passed", ("A-1", "B-1")) for n in range(5))
    )
    rows, unknown = build_trace(catalog, report)
    assert unknown == ["B-1"]
    lines = render_trace(rows)
    assert "t.py::test_2, ... (+2 more)" in lines[2]
    assert "test_4" in render_trace(rows, shown=None)[2]
    assert lines[-1] == "1 of 1 requirement ids proven"


def test_a_command_whose_module_cannot_load_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "harness.contract.command", None)
    assert cli.main(["spec", "check"]) == 2
    assert "avatar-sim spec: cannot load the command" in capsys.readouterr().err


def test_cli_lists_its_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert command.name in out
