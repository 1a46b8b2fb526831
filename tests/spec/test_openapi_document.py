"""The contract as a whole: valid OpenAPI 3.1, loadable by schemathesis 4, complete against the
seed's endpoint list, and carrying the per-operation rules (errors, headers, success codes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate

from harness.contract.loader import OPENAPI_FILE, PROFILE_FILE

METHODS = ("get", "put", "post", "delete", "patch")

OPERATION_IDS = {
    "createSession": ("post", "/v1/sessions"),
    "listSessions": ("get", "/v1/sessions"),
    "retrieveSession": ("get", "/v1/sessions/{session_id}"),
    "endSession": ("post", "/v1/sessions/{session_id}/end"),
    "createPipecatSession": ("post", "/v1/pipecat/sessions"),
    "createAvatar": ("post", "/v1/avatars"),
    "listAvatars": ("get", "/v1/avatars"),
    "retrieveAvatar": ("get", "/v1/avatars/{avatar_id}"),
    "createRun": ("post", "/v1/run/{model_id}"),
    "listRuns": ("get", "/v1/runs"),
    "retrieveRun": ("get", "/v1/runs/{run_id}"),
    "getRunStatus": ("get", "/v1/runs/{run_id}/status"),
    "listRunEvents": ("get", "/v1/runs/{run_id}/events"),
    "cancelRun": ("post", "/v1/runs/{run_id}/cancel"),
    "deleteRun": ("delete", "/v1/runs/{run_id}"),
    "listAssets": ("get", "/v1/assets"),
    "getAssetContent": ("get", "/v1/assets/{asset_id}/content"),
    "listModels": ("get", "/v1/models"),
    "getUsage": ("get", "/v1/usage"),
    "getQuota": ("get", "/v1/billing/quota"),
    "listPlans": ("get", "/v1/billing/plans"),
    "getStatus": ("get", "/v1/status"),
}
PUBLIC = {"getStatus", "listPlans"}
INITIAL_RELEASE = {
    "getStatus",
    "createSession",
    "listSessions",
    "retrieveSession",
    "endSession",
    "listAvatars",
    "retrieveAvatar",
    "createAvatar",
    "getUsage",
}
RATE_LIMITED = {"createSession", "createPipecatSession", "createRun", "createAvatar", "deleteRun"}


def operations(document: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    found: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for template, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                found[item[method]["operationId"]] = (method, template, item[method])
    return found


def resolve(document: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


@pytest.mark.req("VER-1", "HAR-5")
@pytest.mark.parametrize("name", [OPENAPI_FILE, PROFILE_FILE])
def test_documents_are_valid_openapi_31(name: str, spec_dir: Path) -> None:
    from harness.contract.loader import load_yaml

    document = load_yaml(spec_dir / name)
    assert document["openapi"] == "3.1.0"
    validate(document)


@pytest.mark.req("HAR-5")
@pytest.mark.parametrize("name", [OPENAPI_FILE, PROFILE_FILE])
def test_schemathesis_loads_every_operation(name: str, spec_dir: Path) -> None:
    schema = schemathesis.openapi.from_path(spec_dir / name)
    labels = [result.ok().label for result in schema.get_all_operations()]
    expected = len(OPERATION_IDS) - (1 if name == PROFILE_FILE else 0)  # the profile drops cancel
    assert len(labels) == expected


@pytest.mark.req("HAR-5")
def test_schemathesis_generates_requests_including_slashed_model_ids(spec_dir: Path) -> None:
    schema = schemathesis.openapi.from_path(spec_dir / OPENAPI_FILE)
    operation = schema["/v1/run/{model_id}"]["POST"]
    paths: set[str] = set()
    for strategy in operation.get_strategies_from_examples():

        @given(strategy)
        @settings(
            max_examples=1, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def draw(case: Any) -> None:
            paths.add(case.formatted_path)

        draw()
    # The generic client percent-encodes the slash (GAP-RUN-10); the simulator decodes it.
    assert "/v1/run/sim%2Fecho-text" in paths


@pytest.mark.req("HAR-5")
def test_operation_ids_and_paths(spec_document: dict[str, Any]) -> None:
    found = {op_id: (m, t) for op_id, (m, t, _) in operations(spec_document).items()}
    assert found == OPERATION_IDS


@pytest.mark.req("HAR-5")
def test_every_seed_endpoint_is_in_the_spec(
    shared_dir: Path, spec_document: dict[str, Any]
) -> None:
    seed = shared_dir / "seed-spec.md"
    if not seed.is_file():
        pytest.skip("the shared seed specification is not next to the repository")
    mentioned = set(
        re.findall(
            r"\b(GET|POST|DELETE|PUT|PATCH) (/v1/[A-Za-z0-9_/{}.-]*)",
            seed.read_text(encoding="utf-8"),
        )
    )
    assert len(mentioned) >= 20

    def shape(template: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", template.rstrip("/."))

    ours = {(m.upper(), shape(t)) for m, t in OPERATION_IDS.values()}
    missing = sorted(f"{m} {t}" for m, t in mentioned if (m, shape(t)) not in ours)
    assert missing == []


@pytest.mark.req("ERR-1")
def test_every_response_has_request_id_and_errors_the_envelope(
    spec_document: dict[str, Any],
) -> None:
    for op_id, (_, _, operation) in operations(spec_document).items():
        for status, raw in operation["responses"].items():
            response = resolve(spec_document, raw)
            assert "X-Request-Id" in response["headers"], (op_id, status)
            header = resolve(spec_document, response["headers"]["X-Request-Id"])
            assert header["required"] is True
            assert header["schema"]["pattern"] == "^req_"
            if not status.startswith("2"):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (op_id, status)


@pytest.mark.req("ERR-1")
def test_security_and_error_statuses(spec_document: dict[str, Any]) -> None:
    assert spec_document["security"] == [{"bearerAuth": []}]
    scheme = spec_document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    for op_id, (_, template, operation) in operations(spec_document).items():
        statuses = set(operation["responses"])
        assert {"400", "422"} <= statuses, op_id
        if "{" in template:
            assert "404" in statuses, op_id  # an id is taken
        if op_id in PUBLIC:
            assert operation["security"] == []
            assert "401" not in statuses
            continue
        assert "security" not in operation
        assert "401" in statuses, op_id
        if op_id != "listModels":
            assert "403" in statuses, op_id
    ops = operations(spec_document)
    assert {"402", "409", "429", "503"} <= set(ops["createSession"][2]["responses"])
    assert {"402", "403", "409", "422", "429"} <= set(ops["deleteRun"][2]["responses"])
    assert {"402", "409"} <= set(ops["createRun"][2]["responses"])
    assert "409" in ops["cancelRun"][2]["responses"]
    assert "503" in ops["createPipecatSession"][2]["responses"]


@pytest.mark.req("ERR-1", "VER-1")
def test_error_codes_are_listed_per_operation(spec_document: dict[str, Any]) -> None:
    code = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*(\.[a-z0-9]+(_[a-z0-9]+)*)*$")
    for op_id, (_, _, operation) in operations(spec_document).items():
        codes = operation["x-error-codes"]
        assert codes == sorted(set(codes)), op_id
        assert all(code.match(c) for c in codes), op_id
        if op_id not in PUBLIC:
            assert {"api_key.missing", "api_key.invalid"} <= set(codes), op_id
    ops = operations(spec_document)
    create = set(ops["createSession"][2]["x-error-codes"])
    assert {
        "transport.unsupported",
        "metadata.reserved_key",
        "concurrent_sessions",
        "at_capacity",
        "rate_limited",
        "idempotency_key.reused",
    } <= create
    assert set(spec_document["x-seed-event-types"]) <= set(spec_document["x-event-types"])


@pytest.mark.req("HAR-5")
def test_rate_limit_headers(spec_document: dict[str, Any]) -> None:
    ops = operations(spec_document)
    limited = {op_id for op_id, (_, _, op) in ops.items() if op.get("x-rate-limited")}
    assert limited == RATE_LIMITED
    for op_id in limited:
        responses = ops[op_id][2]["responses"]
        for status, raw in responses.items():
            headers = resolve(spec_document, raw)["headers"]
            if status.startswith("2") or status == "429":
                assert {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} <= set(
                    headers
                ), (op_id, status)
            if status in ("429", "503"):
                assert resolve(spec_document, headers["Retry-After"])["required"] is True


@pytest.mark.req("CONV-3")
def test_bodies_are_json_except_the_avatar_upload(spec_document: dict[str, Any]) -> None:
    for op_id, (_, _, operation) in operations(spec_document).items():
        if "requestBody" not in operation:
            continue
        media = set(operation["requestBody"]["content"])
        assert media == (
            {"multipart/form-data"} if op_id == "createAvatar" else {"application/json"}
        ), op_id
    upload = operations(spec_document)["createAvatar"][2]["requestBody"]["content"]
    assert upload["multipart/form-data"]["encoding"]["image"]["contentType"] == (
        "image/png, image/jpeg"
    )


@pytest.mark.req("CONV-7")
def test_idempotency_key_on_the_two_creates(spec_document: dict[str, Any]) -> None:
    for op_id, (_, _, operation) in operations(spec_document).items():
        names = {resolve(spec_document, p)["name"] for p in operation.get("parameters", [])}
        assert ("Idempotency-Key" in names) == (op_id in ("createSession", "createRun")), op_id
    key = spec_document["components"]["parameters"]["IdempotencyKey"]
    assert (key["in"], key["schema"]["minLength"], key["schema"]["maxLength"]) == ("header", 1, 255)


@pytest.mark.req("CONV-4", "CONV-5")
def test_list_parameters(spec_document: dict[str, Any]) -> None:
    ops = operations(spec_document)

    def params(op_id: str) -> dict[str, dict[str, Any]]:
        _, template, operation = ops[op_id]
        item = spec_document["paths"][template]
        raw = [*item.get("parameters", []), *operation.get("parameters", [])]
        return {p["name"]: p for p in (resolve(spec_document, r) for r in raw)}

    for op_id in ("listSessions", "listAvatars", "listRuns", "listAssets"):
        found = params(op_id)
        assert (found["limit"]["schema"]["minimum"], found["limit"]["schema"]["maximum"]) == (
            1,
            100,
        )
        assert "starting_after" in found
    assert params("listAvatars")["limit"]["schema"]["default"] == 20
    assert params("listRunEvents")["limit"]["schema"]["maximum"] == 500
    for op_id in ("listRuns", "listAssets"):
        assert params(op_id)["starting_after"]["schema"]["maxLength"] == 40
    schemas = spec_document["components"]["schemas"]
    assert schemas["RunEventList"]["properties"]["next_cursor"]["type"] == "integer"
    for name in ("SessionList", "AvatarList", "RunList", "AssetList"):
        assert schemas[name]["properties"]["next_cursor"]["type"] == "string"
    assert "has_more" not in schemas["ModelList"]["properties"]
    usage = params("getUsage")
    assert usage["period"]["schema"]["enum"] == ["current_month", "previous_month"]
    assert all(usage[n]["schema"]["maxLength"] == 64 for n in usage)


@pytest.mark.req("HAR-5")
def test_success_codes(spec_document: dict[str, Any]) -> None:
    creates = {"createSession", "createPipecatSession", "createAvatar", "createRun"}
    for op_id, (_, _, operation) in operations(spec_document).items():
        success = [s for s in operation["responses"] if s.startswith("2")]
        expected = "201" if op_id in creates else "202" if op_id == "deleteRun" else "200"
        assert success == [expected], op_id
        seed_stated = op_id in ("deleteRun", "endSession", "listModels")
        assert bool(operation.get("x-seed-success")) == seed_stated, op_id
        marked = operation["responses"][expected].get("x-gap") == "GAP-STATUS-1"
        assert marked != seed_stated or op_id == "cancelRun", op_id


@pytest.mark.req("VER-2")
def test_initial_release_is_marked(spec_document: dict[str, Any]) -> None:
    marked = {
        op_id
        for op_id, (_, _, op) in operations(spec_document).items()
        if op.get("x-initial-release")
    }
    assert marked == INITIAL_RELEASE
    schemas = spec_document["components"]["schemas"]
    assert schemas["LivekitTransport"].get("x-initial-release") is True
    assert "x-initial-release" not in schemas["WebsocketTransport"]
    assert "x-initial-release" not in schemas["PipecatTransport"]


@pytest.mark.req("HAR-5")
def test_links_from_creates(spec_document: dict[str, Any]) -> None:
    ops = operations(spec_document)

    def links(op_id: str) -> dict[str, Any]:
        return dict(ops[op_id][2]["responses"]["201"]["links"])

    session = {link["operationId"]: link["parameters"] for link in links("createSession").values()}
    assert session == {
        "retrieveSession": {"session_id": "$response.body#/id"},
        "endSession": {"session_id": "$response.body#/id"},
    }
    pipecat = {
        link["operationId"]: link["parameters"]["session_id"]
        for link in links("createPipecatSession").values()
    }
    assert pipecat == {
        "retrieveSession": "$response.body#/session/id",
        "endSession": "$response.body#/session/id",
    }
    run = {link["operationId"] for link in links("createRun").values()}
    assert run == {"retrieveRun", "getRunStatus", "listRunEvents", "cancelRun", "deleteRun"}
    assert {link["operationId"] for link in links("createAvatar").values()} == {"retrieveAvatar"}
