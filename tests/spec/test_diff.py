"""VER-1: the diff flags every removal or rename the additive-only rule forbids, and accepts
additions."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.contract import Finding, diff_specs


def kinds(findings: list[Finding]) -> set[str]:
    return {finding.kind for finding in findings}


@pytest.mark.req("VER-1")
def test_identical_documents_have_no_breaking_change(spec_document: dict[str, Any]) -> None:
    assert diff_specs(spec_document, copy.deepcopy(spec_document)) == []


@pytest.mark.req("VER-1")
def test_removed_response_field(spec_document: dict[str, Any], spec: dict[str, Any]) -> None:
    del spec["components"]["schemas"]["Avatar"]["properties"]["voice"]
    findings = diff_specs(spec_document, spec)
    assert kinds(findings) == {"removed-response-property"}
    assert any(
        "voice removed" in str(f) and "GET /v1/avatars/{avatar_id}" in str(f) for f in findings
    )


@pytest.mark.req("VER-1")
def test_renamed_request_field(spec_document: dict[str, Any], spec: dict[str, Any]) -> None:
    props = spec["components"]["schemas"]["CreateSessionRequest"]["properties"]
    props["idle_timeout"] = props.pop("idle_timeout_seconds")
    findings = diff_specs(spec_document, spec)
    assert kinds(findings) == {"removed-request-property"}
    assert all("idle_timeout_seconds removed" in f.detail for f in findings)


@pytest.mark.req("VER-1")
def test_removed_enum_value(spec_document: dict[str, Any], spec: dict[str, Any]) -> None:
    spec["components"]["schemas"]["Session"]["properties"]["status"]["enum"].remove("created")
    findings = diff_specs(spec_document, spec)
    assert kinds(findings) == {"removed-enum-value"}
    assert all("'created' removed" in f.detail for f in findings)


@pytest.mark.req("VER-1")
def test_removed_endpoint_operation_and_parameter(
    spec_document: dict[str, Any], spec: dict[str, Any]
) -> None:
    del spec["paths"]["/v1/usage"]
    del spec["paths"]["/v1/runs/{run_id}"]["delete"]
    spec["paths"]["/v1/avatars"]["get"]["parameters"].pop()  # the `q` search filter
    findings = diff_specs(spec_document, spec)
    assert Finding("removed-path", "/v1/usage", "path removed") in findings
    assert Finding("removed-operation", "DELETE /v1/runs/{run_id}", "operation removed") in findings
    assert (
        Finding("removed-parameter", "GET /v1/avatars", "query parameter 'q' removed") in findings
    )


@pytest.mark.req("VER-1")
def test_removed_header_code_event_and_status(
    spec_document: dict[str, Any], spec: dict[str, Any]
) -> None:
    responses = spec["paths"]["/v1/sessions"]["post"]["responses"]
    del responses["201"]["headers"]["X-RateLimit-Reset"]
    del responses["503"]
    spec["paths"]["/v1/sessions"]["post"]["x-error-codes"].remove("metadata.reserved_key")
    spec["x-event-types"].remove("session.first_frame")
    found = {str(f) for f in diff_specs(spec_document, spec)}
    assert found == {
        "removed-header: POST /v1/sessions response 201: header 'X-RateLimit-Reset' removed",
        "removed-response: POST /v1/sessions response 503: status code removed",
        "removed-error-code: POST /v1/sessions x-error-codes: 'metadata.reserved_key' removed",
        "removed-event-type: x-event-types: 'session.first_frame' removed",
    }


@pytest.mark.req("VER-1")
def test_new_requirements_on_requests_break(
    spec_document: dict[str, Any], spec: dict[str, Any]
) -> None:
    spec["components"]["schemas"]["CreateSessionRequest"]["required"].append("quality")
    spec["paths"]["/v1/runs"]["get"]["parameters"].append(
        {"name": "org", "in": "query", "required": True, "schema": {"type": "string"}}
    )
    assert kinds(diff_specs(spec_document, spec)) == {"now-required", "new-required-parameter"}


@pytest.mark.req("VER-1")
def test_additions_are_allowed(spec_document: dict[str, Any], spec: dict[str, Any]) -> None:
    spec["components"]["schemas"]["Session"]["properties"]["region"] = {"type": "string"}
    spec["components"]["schemas"]["Session"]["properties"]["status"]["enum"].append("paused")
    spec["paths"]["/v1/regions"] = {
        "get": {"operationId": "listRegions", "responses": {"200": {"description": "ok"}}}
    }
    spec["paths"]["/v1/sessions"]["get"]["parameters"].append(
        {"name": "region", "in": "query", "schema": {"type": "string"}}
    )
    spec["paths"]["/v1/sessions"]["post"]["x-error-codes"].append("region.unknown")
    spec["x-event-types"].append("session.paused")
    assert diff_specs(spec_document, spec) == []


@pytest.mark.req("VER-1")
def test_command_line_exit_codes(
    spec_document: dict[str, Any],
    spec: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(yaml.safe_dump(spec_document), encoding="utf-8")
    new.write_text(yaml.safe_dump(spec_document), encoding="utf-8")
    assert main(["spec", "diff", str(old), str(new)]) == 0
    del spec["components"]["schemas"]["Quota"]["properties"]["plan_key"]
    new.write_text(yaml.safe_dump(spec), encoding="utf-8")
    assert main(["spec", "diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert (
        "removed-response-property: GET /v1/billing/quota response 200 application/json: "
        "plan_key removed" in out
    )
    assert diff_specs(old, new) == diff_specs(spec_document, spec)
