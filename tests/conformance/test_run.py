"""A conformance run against the in-process simulator: what passes, what is skipped, the reports."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from datetime import timedelta
from typing import Any

import httpx
import pytest

from harness.conformance.checks import CHECKS
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Exchange
from harness.requirements import load_catalog
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-2")

#: Checks that need a credential beyond the API key, and the option each one names.
OPTIONAL = {
    "revoked_key_rejected": "--revoked-key",
    "scope_runs_read": "--runs-read-key",
    "scope_runs_write": "--runs-write-key",
    "tenant_isolation": "--other-org-key",
    "session_lifecycle_clock": "--sim-admin-token",
}


@pytest.mark.req(
    "HAR-3", "ERR-1", "ERR-2", "ERR-3", "ERR-4", "LIM-1", "LIM-4", "LIM-5", "CONV-4", "CONV-5",
    "CONV-6", "CONV-7", "AUTH-2", "AUTH-3", "AUTH-4", "AUTH-5", "AUTH-6", "AUTH-7",
)  # fmt: skip
def test_the_simulator_conforms_with_every_check_applied() -> None:
    sim = simulated()
    report = run(sim.target, RunOptions(max_examples=3, seed=1))
    assert report.exit_code == 0, report.summary()
    assert report.failed_names() == []
    assert [r.name for r in report.results if r.outcome != "passed"] == [], report.summary()
    assert {r.name for r in report.results} == set(CHECKS)
    assert report.cases > 50
    # The 429s of the concurrency and fuzz traffic were judged, not merely absent.
    assert report.result("retry_after_present").applied > 0
    assert report.result("rate_limit_headers").applied > 0


def test_checks_needing_an_absent_key_are_skipped_not_passed() -> None:
    sim = simulated(roles=())
    report = run(sim.target, RunOptions(max_examples=0))
    assert report.exit_code == 0, report.summary()
    for name, flag in OPTIONAL.items():
        result = report.result(name)
        assert result.outcome == "skipped"
        assert result.skip_reason is not None and flag in result.skip_reason
    fuzz_checks = {r.name for r in report.results if r.kind == "fuzz"}
    assert fuzz_checks and all(report.result(n).outcome == "skipped" for n in fuzz_checks)
    passed = {r.name for r in report.results if r.outcome == "passed"}
    assert passed == {c.name for c in CHECKS.values() if c.kind != "fuzz"} - set(OPTIONAL)
    assert f"{len(OPTIONAL) + len(fuzz_checks)} skipped" in report.summary()


def test_every_check_has_a_stable_name_and_known_requirement_ids() -> None:
    catalog = load_catalog()
    for name, check in CHECKS.items():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", name)
        assert check.name == name and check.requirements and check.description
        for requirement in check.requirements:
            assert requirement in catalog, (name, requirement)


def test_junit_json_and_markdown_name_every_check() -> None:
    sim = simulated(roles=("revoked",))
    report = run(sim.target, RunOptions(max_examples=0))
    suite = ET.fromstring(report.to_junit())
    assert suite.tag == "testsuite"
    cases = suite.findall("testcase")
    assert [case.get("name") for case in cases] == list(CHECKS)
    assert suite.get("tests") == str(len(CHECKS))
    assert suite.get("skipped") == str(report.count("skipped"))
    by_name = {case.get("name"): case for case in cases}
    assert by_name["tenant_isolation"].find("skipped") is not None
    assert by_name["revoked_key_rejected"].find("skipped") is None
    prop = by_name["idempotent_replay"].find("properties/property")
    assert prop is not None and prop.get("value") == "LIM-5 CONV-7"
    document = json.loads(report.to_json())
    assert [r["name"] for r in document["results"]] == list(CHECKS)
    assert document["failed"] == 0
    markdown = report.to_markdown()
    assert all(f"`{name}`" in markdown for name in CHECKS)


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
    assert report.exit_code == 0, report.summary()


def test_response_checks_are_registered_with_schemathesis_and_act_only_in_scope() -> None:
    from types import SimpleNamespace

    from schemathesis.checks import CHECKS as ST_CHECKS
    from schemathesis.core.failures import Failure
    from schemathesis.core.transport import Response

    from harness.conformance.st_checks import SCHEMATHESIS_CHECKS, conformance_scope

    assert set(SCHEMATHESIS_CHECKS) == {c.name for c in CHECKS.values() if c.kind == "response"}
    assert set(SCHEMATHESIS_CHECKS) <= set(ST_CHECKS.get_all_names())
    request = httpx.Request("GET", "http://t/v1/models")
    bad = httpx.Response(
        404, json={"error": {"type": "not_found"}}, headers={"X-Request-Id": "req_1"}
    )
    bad.request = request
    bad.elapsed = timedelta(0)
    case = SimpleNamespace(operation=SimpleNamespace(label="GET /v1/models"))
    check = SCHEMATHESIS_CHECKS["error_envelope_closed"]
    response = Response.from_any(bad)
    assert check(None, response, case) is None  # outside a conformance run: not its business
    with conformance_scope() as applied, pytest.raises(Failure, match="missing"):
        check(None, response, case)
    assert applied["error_envelope_closed"] == 1
