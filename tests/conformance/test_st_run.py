"""schemathesis's own command line with the shipped ``schemathesis.toml`` and the harness's checks
as hooks (``SCHEMATHESIS_HOOKS=harness.conformance.st_checks``), against the contract profile.

A served simulator passes (exit 0); a stub that answers everything with a bare 404 fails (exit 1)
and so does one that only the harness's checks can catch (its error envelope's ``request_id``
differs from ``X-Request-Id``), which passes schemathesis's built-in checks alone. The spec's
request examples and links let the stateful phase create sessions and runs.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from harness.conformance.operations import load_profile
from harness.contract.loader import PROFILE_FILE, default_spec_dir, repo_root
from tests.serve.support import served

pytestmark = pytest.mark.req("HAR-2", "HAR-1")

PROFILE = default_spec_dir() / PROFILE_FILE
HOOKS = "harness.conformance.st_checks"


def _st(url: str, key: str, *, hooks: bool = True) -> subprocess.CompletedProcess[str]:
    """``st run`` from the repository root (where it finds ``schemathesis.toml``)."""
    env = {k: v for k, v in os.environ.items() if k != "SCHEMATHESIS_HOOKS"}
    if hooks:
        env["SCHEMATHESIS_HOOKS"] = HOOKS
    command = [
        str(Path(sys.executable).parent / "st"), "run", str(PROFILE), "--url", url,
        "-H", f"Authorization: Bearer {key}",
        "--max-examples", "2", "--seed", "1", "--phases", "examples,fuzzing,stateful",
        "--no-color",
    ]  # fmt: skip
    return subprocess.run(
        command, cwd=repo_root(), env=env, capture_output=True, text=True, timeout=300
    )


@contextmanager
def _stub(status: int, headers: dict[str, str], body: bytes) -> Iterator[str]:
    """An HTTP server answering every request the same way."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _answer

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_config_applies_to_the_contract_profile() -> None:
    text = (repo_root() / "schemathesis.toml").read_text(encoding="utf-8")
    assert f'title = "{load_profile()["info"]["title"]}"' in text


def test_a_served_simulator_passes_st_run(tmp_path: Path) -> None:
    with served(tmp_path, "--manual-clock") as server:
        key = server.org("enterprise")["keys"]["unrestricted"]
        done = _st(server.base_url, key)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Configuration:" in done.stdout and "schemathesis.toml" in done.stdout


def test_a_bare_404_stub_fails_the_harness_checks() -> None:
    with _stub(404, {}, b"") as url:
        done = _st(url, "sk_live_stub")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "error_envelope_closed (ERR-1)" in done.stdout
    assert "json_bodies (CONV-3)" in done.stdout


def test_only_the_harness_checks_catch_a_mismatched_request_id() -> None:
    envelope = {
        "error": {
            "type": "not_found",
            "code": "route.not_found",
            "message": "No such thing.",
            "param": None,
            "request_id": "req_somebody_else",
        }
    }
    headers = {"Content-Type": "application/json", "X-Request-Id": "req_this_answer"}
    with _stub(404, headers, json.dumps(envelope).encode()) as url:
        without = _st(url, "sk_live_stub", hooks=False)
        judged = _st(url, "sk_live_stub")
    assert without.returncode == 0, without.stdout[-3000:]
    assert judged.returncode == 1, judged.stdout[-3000:]
    assert "request_id_echoed (ERR-3)" in judged.stdout


def stateful_successes() -> dict[str, int]:
    """Successful responses by operationId of schemathesis's stateful phase (seed 5, 150
    examples) against the in-process simulator, on the profile."""
    import schemathesis
    from schemathesis.config import SchemathesisConfig
    from schemathesis.engine import events, from_schema

    from sim.asgi import create_app
    from sim.platform import Platform
    from tests.asgi.fuzzing import fuzz_config

    platform = Platform.create(fuzz_config())  # limits out of reach: the clock does not move
    key = platform.admin.create_organization("Stateful", "enterprise")["keys"]["unrestricted"]
    config = SchemathesisConfig.from_dict(
        {
            "seed": 5,
            "headers": {"Authorization": f"Bearer {key}"},
            "generation": {"max-examples": 150, "database": "none"},
            "phases": {"examples": {"enabled": False}, "coverage": {"enabled": False},
                       "fuzzing": {"enabled": False}},
            "checks": {"enabled": False},
        }
    )  # fmt: skip
    schema = schemathesis.openapi.from_dict(copy.deepcopy(dict(load_profile())), config=config)
    schema.app = create_app(platform)
    succeeded: Counter[str] = Counter()
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            for case_id, node in event.recorder.cases.items():
                interaction = event.recorder.interactions.get(case_id)
                response = getattr(interaction, "response", None)
                if response is not None and 200 <= response.status_code < 300:
                    succeeded[str(node.value.operation.definition.raw.get("operationId"))] += 1
    return dict(succeeded)


def test_the_stateful_phase_creates_sessions_and_runs() -> None:
    """schemathesis's stateful phase against the in-process simulator, on the profile: the
    spec's request examples get sessions and runs created, and links followed from them.

    In a fresh interpreter: with the same seed, the steps the phase takes still depend on what
    the process imported before it (the whole suite collected, with this tree and with main's,
    led it to no run at all; alone it creates dozens)."""
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from tests.conformance.test_st_run import stateful_successes; "
            "print(json.dumps(stateful_successes()))",
        ],
        cwd=repo_root(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    succeeded = Counter(json.loads(completed.stdout.strip().splitlines()[-1]))
    assert succeeded["createSession"] + succeeded["createPipecatSession"] > 0, succeeded
    assert succeeded["createRun"] > 0, succeeded
    followed = {"retrieveSession", "endSession", "retrieveRun", "getRunStatus", "listRunEvents"}
    assert followed & set(succeeded), succeeded
