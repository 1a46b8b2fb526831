"""The facade serves exactly the spec's operations and answers anything else with the envelope."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import Client

from sim.asgi.openapi import load_openapi
from sim.asgi.routes import RouteTable
from sim.asgi.validation import SpecSchemas
from sim.platform import Platform
from tests.asgi.support import Org

_METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")


def _spec_operations() -> set[tuple[str, str, str]]:
    doc = load_openapi()
    return {
        (method.upper(), path, op["operationId"])
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in _METHODS
    }


@pytest.mark.req("HAR-1")
def test_route_set_equals_the_spec_operation_set(app: Any) -> None:
    table = app.state.route_table
    served = {(r.method, r.path, r.operation_id) for r in table.routes}
    assert served == _spec_operations()
    assert len(served) == 22


@pytest.mark.req("HAR-1")
def test_every_platform_operation_is_routed(platform: Platform) -> None:
    """The platform's operation table and the spec agree, so no route calls a missing handler."""
    from sim.platform import OPERATIONS

    spec_ids = {op for _, _, op in _spec_operations()}
    assert spec_ids == set(OPERATIONS)


@pytest.mark.req("HAR-1")
def test_a_route_table_built_from_a_changed_spec_follows_it() -> None:
    doc = {
        "openapi": "3.1.0",
        "paths": {
            "/v1/things/{thing_id}": {
                "get": {
                    "operationId": "getThing",
                    "parameters": [
                        {
                            "name": "thing_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "pattern": "^th_"},
                        }
                    ],
                    "responses": {"204": {"description": "x"}},
                }
            }
        },
    }
    table = RouteTable(SpecSchemas(doc))
    assert [(r.method, r.operation_id, r.success_status) for r in table.routes] == [
        ("GET", "getThing", 204)
    ]
    assert table.match("/v1/things/th_1") is not None
    assert table.match("/v1/things/th_1/more") is None


@pytest.mark.req("ERR-1", "ERR-3")
@pytest.mark.parametrize("path", ["/", "/v2/sessions", "/v1/nope", "/v1/sessions/", "/_sim"])
def test_unknown_routes_answer_404_route_not_found(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "route.not_found"
    assert error["type"] == "not_found"
    assert error["request_id"] == response.headers["x-request-id"]


@pytest.mark.req("ERR-1", "ERR-2", "ERR-3")
@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("DELETE", "/v1/sessions", "GET, POST"),
        ("PUT", "/v1/status", "GET"),
        ("HEAD", "/v1/status", "GET"),
        ("GET", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA/cancel", "POST"),
        ("PATCH", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA", "GET, DELETE"),
    ],
)
def test_wrong_method_answers_405_with_allow(
    client: Client, method: str, path: str, allow: str
) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert response.headers["x-request-id"].startswith("req_")
    if method != "HEAD":
        error = response.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request", "method.not_allowed")


@pytest.mark.req("EP-RUN-1", "CONV-1")
@pytest.mark.parametrize("path", ["/v1/run/sim/echo-text", "/v1/run/sim%2Fecho-text"])
def test_model_ids_route_raw_or_percent_encoded(client: Client, org: Org, path: str) -> None:
    response = client.post(path, json={"input": {"prompt": "hello"}}, headers=org.auth())
    assert response.status_code == 201, response.text
    assert response.json()["model"] == "sim/echo-text"


_SAMPLE_IDS = {
    "session_id": "sess_01JAAAAAAAAAAAAAAAAAAAAAAA",
    "run_id": "run_01JAAAAAAAAAAAAAAAAAAAAAAA",
    "asset_id": "asset_01JAAAAAAAAAAAAAAAAAAAAAAA",
    "avatar_id": "av_stock_mock",
    "model_id": "sim/echo-text",
}


@pytest.mark.req("HAR-1", "AUTH-2")
def test_every_spec_operation_is_reachable_over_http(client: Client) -> None:
    """Each (method, path) of the spec reaches its operation: 401 or, for public ones, 200."""
    doc = load_openapi()
    for method, path, _ in sorted(_spec_operations()):
        concrete = path.format(**_SAMPLE_IDS)
        response = client.request(method, concrete)
        public = doc["paths"][path][method.lower()].get("security") == []
        expected = 200 if public else 401
        assert response.status_code == expected, (method, path, response.text)
