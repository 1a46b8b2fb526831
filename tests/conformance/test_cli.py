"""``avatar-sim conformance`` end to end: exit codes, files, and a served simulator."""

from __future__ import annotations

import json
import socket
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

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
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--time-factor", "0"],
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--max-wait", "-5"],
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--timeout", "nan"],
        ["--base-url", "http://127.0.0.1:9", "--api-key", "k", "--quick",
         "--sim-admin-token", "t"],
    ],
)  # fmt: skip
def test_invalid_values_exit_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conformance", *arguments]) == 2
    assert "conformance:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "arguments",
    [
        ["--check", "no_such_check"],
        ["--transport-json", "{not json"],
        ["--transport-json", "[1, 2]"],
        ["--run-json", "7"],
    ],
)
def test_unusable_inputs_exit_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    base = ["conformance", "--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    assert cli.main([*base, *arguments]) == 2
    assert "conformance:" in capsys.readouterr().err


def _keys(server: Any) -> list[str]:
    org, other = server.org("enterprise"), server.org("starter")
    return [
        "--base-url", server.base_url,
        "--api-key", org["keys"]["unrestricted"],
        "--other-org-key", other["keys"]["unrestricted"],
        "--runs-read-key", org["keys"]["runs_read"],
        "--runs-write-key", org["keys"]["runs_write"],
        "--revoked-key", org["keys"]["revoked"],
    ]  # fmt: skip


#: A quick cross-section for the served test in ``make test``: the response checks judge every
#: answer of these scripts; the whole set runs in the slow test below.
SERVED_CHECKS = (
    "error_envelope_closed", "request_id_echoed", "session_shape", "worker_token_hidden",
    "rate_limit_headers", "idempotent_replay", "idempotent_creates", "session_lifecycle",
    "session_lifecycle_clock", "session_transitions", "run_lifecycle", "tenant_isolation",
    "foreign_keys", "create_rate_limit", "rate_limit_bursts",
)  # fmt: skip


@pytest.mark.req("HAR-3", "HAR-5")
def test_a_served_simulator_conforms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transport = (
        '{"url": "wss://rooms.example.org", "room_name": "qa", "worker_token": "tok-qa-1234"}'
    )
    with served(tmp_path, "--manual-clock") as server:
        org = server.org("enterprise")
        junit, report = tmp_path / "junit.xml", tmp_path / "report.json"
        code = cli.main(
            [
                "conformance", *_keys(server),
                "--sim-admin-token", server.keys["admin_token"],
                "--transport-json", transport,
                "--avatar-id", "av_stock_mock",
                "--model", "sim/echo-text",
                *[f"--check={name}" for name in SERVED_CHECKS],
                "--max-examples", "0",
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
    assert f"{len(SERVED_CHECKS)} passed, 0 failed, 0 incomplete, 0 not applicable" in out
    assert "CONFORMING" in out
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0"
    names = {case.get("name") for case in suite.findall("testcase")}
    assert names == set(SERVED_CHECKS)
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["failed"] == 0 and document["base_url"] == server.base_url
    assert document["coverage"]["checked"] > 0
    assert org["keys"]["unrestricted"] not in out + report.read_text(encoding="utf-8")


def _speech_run(server: Any) -> None:
    """One finished run with an audio output, so the organization has an asset."""
    key = server.org("enterprise")["keys"]["unrestricted"]
    with server.client() as client:
        client.post("/v1/run/sim/speech", json={"input": {"text": "hi"}},
                    headers={"Authorization": f"Bearer {key}"})  # fmt: skip
        client.post("/_sim/clock/advance", json={"seconds": 60}, headers=server.admin_headers)


@pytest.mark.slow
@pytest.mark.req("HAR-3", "HAR-5")
def test_a_served_simulator_passes_every_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served(tmp_path, "--manual-clock") as server:
        _speech_run(server)
        code = cli.main(
            ["conformance", *_keys(server), "--sim-admin-token", server.keys["admin_token"],
             "--max-examples", "1", "--seed", "2"]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 failed, 0 incomplete, 0 not applicable" in out
    assert "checked: 72 of 81 contract ids" in out


#: The scripts that need time to pass on the target, and the rules that judge them.
TIMERS = ("session_lifecycle_clock", "session_timers_probe", "session_timers", "session_stamps")


@pytest.mark.req("HAR-2", "HAR-3", "SES-ST-3", "SES-ST-6", "SES-ST-7", "RES-SESS-4")
def test_timers_are_checked_in_real_time_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No admin token: the timers are waited for in real time. The served clock runs fifty
    times faster than the wall and ``--time-factor`` says so, so every wait the harness takes
    is scaled to it and the run takes seconds."""
    with served(tmp_path, "--time-factor", "0.02") as server:
        code = cli.main(
            ["conformance", *_keys(server), "--time-factor", "0.02", "--max-examples", "0",
             *[f"--check={name}" for name in TIMERS]]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert f"{len(TIMERS)} passed, 0 failed, 0 incomplete" in captured.out
    assert "waiting" in captured.err and "finished in" in captured.err


@pytest.mark.req("HAR-2")
def test_a_quick_run_that_leaves_checks_undone_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--quick`` takes no wait: the timer scripts are left incomplete, which exits 3
    (nothing failed, but the run is not complete) unless ``--allow-incomplete``."""
    with served(tmp_path, "--time-factor", "0.02") as server:
        arguments = ["conformance", *_keys(server), "--quick", "--max-examples", "0",
                     *[f"--check={name}" for name in TIMERS[:2]]]  # fmt: skip
        incomplete = cli.main(arguments)
        allowed = cli.main([*arguments, "--allow-incomplete"])
    out = capsys.readouterr().out
    assert (incomplete, allowed) == (3, 0)
    assert "INCOMPLETE" in out and "without --quick" in out


@pytest.mark.slow
@pytest.mark.req("HAR-2", "HAR-3", "LIM-3", "SES-ST-6", "SES-ST-7")
def test_a_default_run_in_real_time_takes_at_most_six_minutes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's run against a served simulator whose clock is the wall's: the keys, a
    model and a run body, no admin token. Every check that can run does, in real time; the
    24-hour window is beyond the run's time, said so with exit 0; it takes at most six
    minutes."""
    with served(tmp_path) as server:
        started = time.monotonic()
        code = cli.main(
            ["conformance", *_keys(server), "--model", "sim/echo-text",
             "--run-json", '{"operation": "generate", "input": {"prompt": "hello"}}']
        )  # fmt: skip
        took = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == 0, captured.out
    assert "0 failed, 0 incomplete" in captured.out and "1 beyond time" in captured.out
    assert "beyond this run's time" in captured.out and "--max-wait 86402" in captured.out
    assert took <= 360, took
    assert "finished in" in captured.err
