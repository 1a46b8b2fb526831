"""A benchmark report says what machine it was measured on (``bench.machine``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.__main__ import main
from bench.machine import describe

pytestmark = pytest.mark.req("PERF-5")

_TWO_PROCESSORS = """\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2449.998
flags\t\t: fpu vme

processor\t: 1
model name\t: Something Else
cpu MHz\t\t: 1000.000
"""


def test_the_first_processors_name_and_clock_are_read_from_cpuinfo() -> None:
    machine = describe(_TWO_PROCESSORS)
    assert machine["processor"] == "AMD EPYC 7B13"
    assert machine["processor_mhz"] == 2450
    assert machine["cores"] == os.cpu_count()
    assert machine["python"].startswith("CPython ") or machine["python"].startswith("PyPy ")
    assert isinstance(machine["python_pgo"], bool) and isinstance(machine["python_lto"], bool)


@pytest.mark.parametrize("text", ["", "model name : X\ncpu MHz : fast\n", "garbage without colons"])
def test_a_clock_the_system_does_not_give_is_none_not_a_guess(text: str) -> None:
    assert describe(text)["processor_mhz"] is None


def test_make_bench_prints_the_machine_first_and_keeps_it_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, results = tmp_path / "report.json", tmp_path / "results"
    argv = ["--only", "bench_sessions", "--scale", "0.005", "--json", str(out)]
    assert main([*argv, "--results", str(results)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert list(lines[0]) == ["machine"] and list(lines[1]) == ["bench_sessions"]
    report = json.loads(out.read_text(encoding="utf-8"))
    [dated] = results.iterdir()  # the same report, kept under its date and time
    assert dated.name == report["machine"]["measured_at"].replace(":", "") + ".json"
    assert json.loads(dated.read_text(encoding="utf-8")) == report
    assert report["goals"] and all(line.startswith("goal ") for line in report["goals"])
    assert report["machine"]["cores"] == os.cpu_count()
    assert report["machine"]["measured_at"].endswith("Z")
    assert report["bench_sessions"]["customers"] == 200
