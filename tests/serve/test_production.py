"""Served mode behaves like a production server (SIM-8).

* a client that stops half-way through a request body cannot keep SIGTERM from stopping the
  server: uvicorn's graceful shutdown has a timeout (``--graceful-timeout``);
* the listening socket is a TCP socket with ``TCP_NODELAY``, and connections accepted on it
  inherit the option (read from the socket, not inferred from timings): without it every
  kept-alive response waited for the client's delayed ACK (about 40 ms);
* every 500 is logged on stderr with its traceback and request id;
* ``--access-log`` prints one line per request.

Each test runs a real ``avatar-sim serve`` subprocess on a loopback port.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from harness.cli import build_parser
from harness.serve.command import options_from
from harness.serve.runner import ServeOptions, bind, build
from sim.config import SimConfig
from tests.serve.support import SHUTDOWN_SECONDS, STARTUP_SECONDS, served


@pytest.mark.req("SIM-8")
def test_the_listening_socket_is_tcp_with_nodelay_and_connections_inherit_it() -> None:
    listener = bind("127.0.0.1", 0)
    try:
        assert listener.proto == socket.IPPROTO_TCP
        assert listener.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        listener.listen(1)
        with socket.create_connection(listener.getsockname()[:2], timeout=5) as client:
            accepted, _ = listener.accept()
            with accepted:
                # asyncio sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP; a socket
                # made with proto 0 got neither that nor the listener's option.
                assert accepted.proto == socket.IPPROTO_TCP
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            assert client.fileno() >= 0
    finally:
        listener.close()


@pytest.mark.req("SIM-8")
def test_a_half_sent_body_does_not_keep_sigterm_from_stopping_the_server(tmp_path: Path) -> None:
    with served(tmp_path, "--manual-clock", "--graceful-timeout", "1") as running:
        host, port = running.base_url.removeprefix("http://").split(":")
        key = running.org("enterprise")["keys"]["unrestricted"]
        stalled = socket.create_connection((host, int(port)), timeout=5)
        try:
            head = (
                "POST /v1/sessions HTTP/1.1\r\nHost: sim\r\n"
                f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
                "Content-Length: 1000\r\n\r\n"
            )
            stalled.sendall(head.encode() + b'{"avatar_id": "av_st')  # and then nothing
            with httpx.Client(base_url=running.base_url, timeout=5) as http:
                assert http.get("/v1/status").status_code == 200  # the server is serving
            time.sleep(0.3)  # the stalled request is now waiting for the rest of its body
            code, took = running.stop(signal.SIGTERM)
        finally:
            stalled.close()
        out, _ = running.output()
    assert code == 0
    assert took < SHUTDOWN_SECONDS
    assert b"GET /v1/status" not in out  # no access log unless asked for


_FAULTY_SERVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from harness.serve import runner
    from sim.platform import Platform

    def broken(self, caller, params):
        raise RuntimeError("injected fault for the test")

    Platform.op_get_status = broken
    options = runner.ServeOptions(port=0, keys_out=Path(sys.argv[1]), time_factor=None)
    sys.exit(runner.serve(options))
    """
)


@pytest.mark.req("SIM-8", "ERR-1", "ERR-3")
def test_every_500_is_logged_with_its_traceback_and_request_id(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys.json"
    process = subprocess.Popen(
        [sys.executable, "-c", _FAULTY_SERVER, str(keys_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not keys_file.exists():
            assert process.poll() is None, process.communicate()[1].decode()
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        base_url = json.loads(keys_file.read_text())["base_url"]
        with httpx.Client(base_url=base_url, timeout=5) as http:
            response = http.get("/v1/status")
        assert response.status_code == 500
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("internal", "internal_error")
        request_id = response.headers["x-request-id"]
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=SHUTDOWN_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    log = err.decode()
    assert request_id in log, log
    assert "Traceback (most recent call last)" in log, log
    assert "RuntimeError: injected fault for the test" in log, log
    assert "GET /v1/status" in log, log


@pytest.mark.req("SIM-8")
def test_the_access_log_is_an_option(tmp_path: Path) -> None:
    with served(tmp_path, "--manual-clock", "--access-log") as running:
        with running.client() as http:
            assert http.get("/v1/billing/plans").status_code == 200
        code, _ = running.stop(signal.SIGTERM)
        out, _ = running.output()
    assert code == 0
    assert '"GET /v1/billing/plans HTTP/1.1" 200' in out.decode(), out.decode()


def _options(*argv: str) -> ServeOptions:
    args = build_parser(["serve", *argv]).parse_args(["serve", *argv])
    return options_from(args, None)


@pytest.mark.req("SIM-8", "SIM-2")
def test_the_api_log_size_is_an_option_and_bounds_the_log() -> None:
    simulator = build(_options("--manual-clock", "--api-log-size", "3"), "http://127.0.0.1:1")
    platform = simulator.platform
    assert platform.config.history.api_log_size == 3
    seeded = len(platform.api_log) + platform.api_log.dropped  # the seeding's own runs
    for _ in range(7):
        platform.call("getStatus", None, {})
    assert [call.operation_id for call in platform.api_log] == ["getStatus"] * 3
    assert platform.api_log.dropped == seeded + 4


@pytest.mark.req("SIM-8")
def test_the_api_log_keeps_every_call_when_asked_and_the_default_otherwise() -> None:
    unbounded = build(_options("--api-log-size", "all"), "http://127.0.0.1:1").platform
    assert unbounded.config.history.api_log_size is None
    default = build(_options(), "http://127.0.0.1:1").platform
    assert default.config.history.api_log_size == SimConfig().history.api_log_size


@pytest.mark.req("SIM-8")
@pytest.mark.parametrize("size", ["-1", "many", "1.5"])
def test_a_bad_api_log_size_is_refused_by_the_parser(
    size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _options("--api-log-size", size)
    assert exited.value.code == 2
    assert "--api-log-size" in capsys.readouterr().err
