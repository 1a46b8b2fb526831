"""``avatar-sim conformance`` end to end: exit codes, files, and a served simulator."""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import cli
from tests.serve.support import served

pytestmark = pytest.mark.req("HAR-2")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    code = cli.main(["conformance", "--base-url", url, "--api-key", "sk_live_x", "--timeout", "5"])
    assert code == 2
    assert "cannot reach the target" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments",
    [
        ["--api-key", "k"],  # no --base-url
        ["--base-url", "http://127.0.0.1:9"],  # no --api-key
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--max-examples", "many"],
    ],
)
def test_missing_or_malformed_arguments_exit_2(arguments: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["conformance", *arguments])
    assert exited.value.code == 2


@pytest.mark.parametrize(
    "arguments",
    [
        ["--base-url", "ftp://host", "--api-key", "k"],
        ["--base-url", "not a url", "--api-key", "k"],
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--max-examples", "-1"],
    ],
)
def test_invalid_values_exit_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conformance", *arguments]) == 2
    assert "conformance:" in capsys.readouterr().err


@pytest.mark.req("HAR-3", "HAR-5")
def test_a_served_simulator_conforms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with served(tmp_path, "--manual-clock") as server:
        org = server.org("enterprise")
        other = server.org("starter")
        junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
        code = cli.main(
            [
                "conformance",
                "--base-url", server.base_url,
                "--api-key", org["keys"]["unrestricted"],
                "--other-org-key", other["keys"]["unrestricted"],
                "--runs-read-key", org["keys"]["runs_read"],
                "--runs-write-key", org["keys"]["runs_write"],
                "--revoked-key", org["keys"]["revoked"],
                "--sim-admin-token", server.keys["admin_token"],
                "--max-examples", "1",
                "--seed", "2",
                "--junit", str(junit),
                "--report", str(report),
            ]
        )  # fmt: skip
        wrong_key = cli.main(
            ["conformance", "--base-url", server.base_url, "--api-key", "sk_live_" + "0" * 32]
        )
    out = capsys.readouterr().out
    assert code == 0, out
    assert wrong_key == 2
    assert "0 failed, 0 skipped" in out
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0"
    names = {case.get("name") for case in suite.findall("testcase")}
    assert {"session_lifecycle", "idempotent_replay", "error_envelope_closed"} <= names
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["failed"] == 0 and document["base_url"] == server.base_url
    assert org["keys"]["unrestricted"] not in out + report.read_text(encoding="utf-8")
