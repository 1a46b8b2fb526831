"""A conformance run against the in-process simulator: what passes, what is skipped, the reports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.conformance.checks import CHECKS
from harness.conformance.clock import QuickClock, RealClock
from harness.conformance.coverage import NOT_CHECKABLE, contract_ids
from harness.conformance.report import BODIES_DIR
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Exchange
from harness.requirements import load_catalog
from tests.conformance.edits import Call, Edits, Reply
from tests.conformance.support import Simulated, simulated

pytestmark = pytest.mark.req("HAR-2")

#: Every requirement id a registered check carries.
CHECKED_IDS = sorted({r for check in CHECKS.values() for r in check.requirements})


@pytest.mark.req(*CHECKED_IDS)
def test_the_simulator_conforms_with_every_check_applied() -> None:
    sim = simulated()
    report = run(sim.target, RunOptions(max_examples=3, seed=1))
    assert report.exit_code == 0, report.summary()
    assert [r.name for r in report.results if r.outcome != "passed"] == [], report.summary()
    assert {r.name for r in report.results} == set(CHECKS)
    assert report.cases > 50
    # The 429s of the concurrency and fuzz traffic were judged, not merely absent.
    assert report.result("retry_after_present").applied > 0
    assert report.result("rate_limit_headers").applied > 0
    checkable = [r for r in contract_ids() if r not in NOT_CHECKABLE]
    assert list(report.coverage.checked) == checkable
    assert f"checked: {len(checkable)} of {len(contract_ids())} contract ids" in report.summary()


def test_every_contract_id_is_checked_or_explained() -> None:
    carried = {r for check in CHECKS.values() for r in check.requirements}
    contract = set(contract_ids())
    assert carried | set(NOT_CHECKABLE) >= contract
    assert not carried & set(NOT_CHECKABLE)
    assert set(NOT_CHECKABLE) <= contract
    assert all(len(reason) > 20 for reason in NOT_CHECKABLE.values())


#: What a run given only the API key cannot do, by the flag it names.
NEEDS = {
    "revoked_key": "--revoked-key",
    "scope_runs_read": "--runs-read-key",
    "scope_runs_write": "--runs-write-key",
    "foreign_keys": "--other-org-key",
}
#: What no input can bring about on a deployment: the simulator's admin API alone can.
ADMIN_ONLY = ("startup_timeout_fails", "at_capacity_refused")


def virtual_real_time(sim: Simulated) -> RunOptions:
    """Options for a run that waits "in real time" on the simulator's own clock: each wait
    advances the platform, and budgets are kept on that clock, as a real run's would be."""
    platform = sim.platform
    clock = RealClock(sleep=platform.advance, monotonic=lambda: platform.clock.now)
    return RunOptions(max_examples=3, seed=1, clock=clock, wall=lambda: platform.clock.now)


@pytest.mark.req(*CHECKED_IDS)
def test_without_the_admin_token_every_check_but_the_admin_ones_runs_in_real_time() -> None:
    """The default run against a deployment, given every input the README asks for: no admin
    clock, real waits (here on the simulator's clock, so the test takes seconds). Everything
    runs but what needs the admin API (not applicable) and the 24-hour window, which is beyond
    the run's time and said so without changing the exit code: a conforming target exits 0."""
    sim = simulated(roles=("other_org", "runs_read", "runs_write", "revoked"))
    started = sim.platform.clock.now
    report = run(sim.target, virtual_real_time(sim))
    assert report.failed_names() == [], report.summary()
    # Nor does any session fail for want of a worker, which the run cannot bring about.
    assert report.names("not_applicable") == ["unplaced_failure_code", *ADMIN_ONLY]
    assert report.names("incomplete") == []
    assert report.names("beyond_time") == ["idempotency_window"]
    assert "--max-wait 86402" in (report.result("idempotency_window").flag or "")
    assert report.exit_code == 0
    assert (
        report.verdict().startswith("CONFORMING") and "beyond this run's time" in report.verdict()
    )
    # The schedule keeps both keys within the rate limit and overlaps their waits: the whole
    # run takes well under the 6 minutes a default run is planned for.
    assert sim.platform.clock.now - started < 360
    assert report.coverage.unchecked["LIM-5"].startswith("partly")
    assert "beyond this run's time" in report.coverage.unchecked["LIM-5"]
    assert report.coverage.unchecked["SES-ST-2"].startswith("partly")
    assert "beyond this run's time" in report.coverage.line()


def test_checks_the_run_cannot_do_name_the_flag_that_would_let_them() -> None:
    report = run(simulated(roles=()).target, RunOptions(max_examples=0, clock=QuickClock()))
    assert report.failed_names() == [], report.summary()
    for name, flag in NEEDS.items():
        result = report.result(name)
        assert result.outcome == "incomplete", name
        assert result.flag == flag and (result.skip_reason or "").startswith("needs a"), name
    for name in ADMIN_ONLY:
        assert report.result(name).outcome == "not_applicable"
    for result in report.results:
        if result.outcome in ("incomplete", "not_applicable", "partly", "unreached"):
            assert result.skip_reason, result.name
    # --quick takes no wait: what needs one (the timers, a window, pacing) names it.
    quick = [r.name for r in report.results if r.flag == "without --quick"]
    assert {"session_timers_probe", "rate_limit_bursts"} <= set(quick)
    assert report.result("negative_data_rejection").flag == "--max-examples 20"
    assert report.exit_code == 3
    checked = len(report.coverage.checked)
    assert 0 < checked < len(contract_ids()) - len(NOT_CHECKABLE)
    assert f"checked: {checked} of {len(contract_ids())} contract ids" in report.summary()
    for requirement, reason in report.coverage.unchecked.items():
        assert reason.startswith(("incomplete:", "partly:", "not checkable", "not applicable")), (
            requirement
        )
    flags = report.flags()
    assert {"--other-org-key", "--revoked-key", "without --quick"} <= set(flags)


def test_every_check_has_a_stable_name_and_known_requirement_ids() -> None:
    """Every check that judges carries ids (a script that only drives the target to where the
    model's rules bite carries none), and every model rule states its edge."""
    catalog = load_catalog()
    for name, check in CHECKS.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
        assert check.name == name and check.description
        assert check.requirements or check.kind == "scenario", name
        assert check.edge or check.kind != "model", name
        for requirement in check.requirements:
            assert requirement in catalog, (name, requirement)


def test_junit_json_and_markdown_name_every_check() -> None:
    sim = simulated(roles=("revoked", "admin"))
    report = run(sim.target, RunOptions(max_examples=0))
    suite = ET.fromstring(report.to_junit())
    assert suite.tag == "testsuite"
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == list(CHECKS)
    assert suite.get("tests") == str(len(CHECKS))
    not_run = sum(report.count(o) for o in ("incomplete", "not_applicable", "unreached"))
    assert suite.get("skipped") == str(not_run) and not_run > 0
    by_name = {case.get("name"): case for case in cases}
    assert by_name["foreign_keys"].find("skipped") is not None
    assert by_name["revoked_key"].find("skipped") is None
    prop = by_name["idempotent_replay"].find("properties/property")
    assert prop is not None and prop.get("value") == "LIM-5 CONV-7"
    coverage = report.coverage.line()
    suite_properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert suite_properties["coverage"] == coverage
    assert suite_properties["unchecked VER-1"].startswith("not checkable")
    skipped = by_name["foreign_keys"].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == (
        "incomplete: needs a key of another organization (--other-org-key)"
    )
    unreached = by_name["tenant_isolation"].find("skipped")
    assert unreached is not None and (unreached.get("message") or "").startswith("unreached")
    document = json.loads(report.to_json())
    assert [r["name"] for r in document["results"]] == list(CHECKS)
    assert document["failed"] == 0 and document["exit_code"] == 3
    assert document["flags"]["--other-org-key"] == ["foreign_keys"]
    proofs = document["coverage"]["proofs"]
    assert set(proofs) == set(report.coverage.checked)
    assert proofs["LIM-6"].startswith("session_create: POST /v1/sessions -> ")
    assert document["coverage"]["checked"] == len(report.coverage.checked)
    assert document["coverage"]["total"] == len(contract_ids())
    assert set(document["coverage"]["unchecked"]) >= set(NOT_CHECKABLE)
    markdown = report.to_markdown()
    assert all(f"`{name}`" in markdown for name in CHECKS)
    assert coverage in markdown and "- `VER-1`: not checkable" in markdown
    assert "**INCOMPLETE" in markdown and "shown by `POST /v1/sessions -> 4" in markdown


def test_a_reproduction_names_each_secret_by_its_variable() -> None:
    sim = simulated()
    secret = sim.credentials.api
    exchange = sim.target.request(
        "POST",
        "/v1/sessions",
        json_body={"avatar_id": "av_x", "transport": {"type": "websocket"}},
        headers={"Idempotency-Key": "it's $HOME"},
    )
    assert isinstance(exchange, Exchange) and exchange.status == 400
    curl = exchange.curl(sim.credentials.secrets())
    assert secret not in curl
    # A shell reads it back: only the placeholder expands, any other ``$`` stays literal.
    echo = curl.replace("curl", "printf '%s\\n'", 1)
    out = subprocess.run(
        ["bash", "-c", echo], env={"API_KEY": secret, "HOME": "/elsewhere"}, capture_output=True
    )
    words = out.stdout.decode().splitlines()
    assert words[:4] == ["-sS", "-i", "-X", "POST"]
    assert words[-1] == "http://testserver/v1/sessions"
    assert f"authorization: Bearer {secret}" in words
    assert "idempotency-key: it's $HOME" in words
    body = words[words.index("--data-binary") + 1]
    assert json.loads(body) == {"avatar_id": "av_x", "transport": {"type": "websocket"}}


def test_the_simulators_admin_api_is_not_judged_by_the_contract() -> None:
    def admin_without_request_ids(app: Any, keys: dict[str, str]) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            async def strip(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message = dict(message)
                    message["headers"] = [
                        (k, v) for k, v in message["headers"] if k.lower() != b"x-request-id"
                    ]
                await send(message)

            admin = scope["type"] == "http" and str(scope["path"]).startswith("/_sim/")
            await app(scope, receive, strip if admin else send)

        return wrapped

    sim = simulated(wrap=admin_without_request_ids)
    seen: list[str] = []
    sim.target.observers.append(lambda exchange: seen.append(exchange.path))
    report = run(sim.target, RunOptions(max_examples=0))
    assert "/_sim/clock/advance" in seen
    assert report.result("session_lifecycle_clock").outcome == "passed"
    assert report.failed_names() == [], report.summary()


def test_response_checks_judge_every_response_given_to_schemathesis() -> None:
    from types import SimpleNamespace

    from schemathesis.core.failures import Failure
    from schemathesis.core.transport import Response

    from harness.conformance.st_bridge import SCHEMATHESIS_CHECKS

    assert set(SCHEMATHESIS_CHECKS) == {c.name for c in CHECKS.values() if c.kind == "response"}
    request = httpx.Request("GET", "http://t/v1/models")
    bad = httpx.Response(
        404, json={"error": {"type": "not_found"}}, headers={"X-Request-Id": "req_1"}
    )
    bad.request = request
    bad.elapsed = timedelta(0)
    case = SimpleNamespace(operation=SimpleNamespace(label="GET /v1/models"))
    response = Response.from_any(bad)
    with pytest.raises(Failure, match="missing"):
        SCHEMATHESIS_CHECKS["error_envelope_closed"](None, response, case)


def test_only_the_hooks_module_registers_the_checks_with_schemathesis() -> None:
    script = """
import sys
from schemathesis.checks import CHECKS, load_all_checks
import harness.conformance.runner
load_all_checks()
before = set(CHECKS.get_all_names())
assert "harness.conformance.st_checks" not in sys.modules
import harness.conformance.st_checks as hooks
after = set(CHECKS.get_all_names())
print(sorted(before & set(hooks.REGISTERED)), sorted(set(hooks.REGISTERED) - after))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[] []", done.stderr


# -- reproductions -------------------------------------------------------------------------------


def _argv(curl: str, env: dict[str, str], cwd: Path) -> list[str]:
    """The words a POSIX shell makes of ``curl`` (what curl would receive)."""
    echo = curl.replace("curl", "printf '%s\\0'", 1)
    done = subprocess.run(["bash", "-c", echo], env=env, cwd=cwd, capture_output=True, check=True)
    return done.stdout.decode().split("\0")[:-1]


def _replayed(argv: list[str], cwd: Path) -> httpx.Request:
    """The request curl would send for ``argv`` (its options as this harness writes them)."""
    method, headers, body = "GET", [], b""
    words = iter(argv)
    for word in words:
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers.append((name.rstrip(";"), value.strip()))
        elif word == "--data-binary":
            data = next(words)
            body = (cwd / data[1:]).read_bytes() if data.startswith("@") else data.encode()
        elif not word.startswith("-"):
            url = word
    return httpx.Request(method, url, headers=headers, content=body)


def _same_request(replayed: httpx.Request, original: Exchange) -> None:
    skipped = {"host", "content-length", "accept-encoding", "connection"}
    assert replayed.method == original.method
    assert str(replayed.url) == original.url
    assert replayed.content == original.request_body
    theirs = {k.lower(): v for k, v in original.request_headers.items() if k.lower() not in skipped}
    ours = {k.lower(): v for k, v in replayed.headers.items() if k.lower() not in skipped}
    assert ours == theirs


def _gif_accepted(call: Call, reply: Reply) -> None:
    """A GIF answered as a ready avatar: neither refused at upload nor left to fail in fitting."""
    if call.method == "POST" and call.path == "/v1/avatars" and b"GIF8" in call.body:
        reply.status = 201
        reply.set_json({"id": "av_gif", "object": "avatar", "status": "ready"})


@pytest.mark.req("EP-AV-1")
def test_a_multipart_reproduction_replays_the_exact_bytes(tmp_path: Path) -> None:
    sim = simulated(edits=Edits(response=(_gif_accepted,)))
    uploads: list[Exchange] = []
    sim.target.observers.append(lambda e: uploads.append(e) if b"GIF8" in e.request_body else None)
    only = frozenset({"avatar_upload", "avatars"})
    report = run(sim.target, RunOptions(max_examples=0, only=only))
    failure = report.result("avatars").failures[0]
    assert failure.curl is not None and f"@{BODIES_DIR}/001.bin" in failure.curl
    report.write(str(tmp_path / "report.md"))
    assert (tmp_path / BODIES_DIR / "001.bin").read_bytes() == uploads[0].request_body
    argv = _argv(failure.curl, {"API_KEY": sim.credentials.api}, tmp_path)
    replayed = _replayed(argv, tmp_path)
    _same_request(replayed, uploads[0])
    assert replayed.headers["content-type"].startswith("multipart/form-data; boundary=")


def test_an_inline_reproduction_replays_the_exact_bytes(tmp_path: Path) -> None:
    sim = simulated()
    body = {"avatar_id": "av_x", "metadata": {"q": 'it\'s "$HOME" \\ `x`\n\tü'}}
    exchange = sim.target.request(
        "POST", "/v1/sessions", json_body=body, headers={"Idempotency-Key": ""}
    )
    assert exchange.body_fits_inline()
    curl = exchange.curl(sim.credentials.secrets(), body_file="unused.bin")
    assert "@unused.bin" not in curl
    env = {"API_KEY": sim.credentials.api, "HOME": "/elsewhere"}
    _same_request(_replayed(_argv(curl, env, tmp_path), tmp_path), exchange)
