"""The facade serves its contract in-process too: the document it routes by, the profile, docs.

The served-mode tests (``tests/serve/test_served_contract.py``) check the same routes on a real
port; these check what only an in-process app can show: an app built on another document serves
that document, and the routes stay outside ``/v1`` and outside the error-free happy path.
"""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest
import yaml

from harness.contract import derive_profile, load_spec
from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.platform import Platform
from tests.asgi.support import assert_envelope

pytestmark = pytest.mark.req("SIM-8")


def _client(spec: dict[str, Any] | None = None) -> httpx.Client:
    app = create_app(Platform.create(), spec=spec)
    return httpx.Client(transport=SyncASGITransport(app), base_url="http://testserver")


def test_the_app_serves_the_document_it_routes_by() -> None:
    spec = copy.deepcopy(load_spec())
    spec["info"]["title"] = "A narrower contract"
    del spec["paths"]["/v1/status"]
    with _client(spec) as client:
        assert client.get("/openapi.json").json() == spec
        assert yaml.safe_load(client.get("/openapi.yaml").text) == spec
        assert client.get("/v1/status").status_code == 404  # routed by the same document
        assert client.get("/contract/openapi.json").json() == derive_profile(load_spec())


def test_contract_routes_are_public_and_read_only() -> None:
    with _client() as client:
        for path in ("/openapi.json", "/openapi.yaml", "/contract/openapi.yaml", "/docs"):
            response = client.get(path)
            assert response.status_code == 200, path
            assert response.headers["x-request-id"].startswith("req_")
            assert client.head(path).status_code == 200, path
        missing = client.get("/docs/static/no-such-asset.js")
        assert_envelope(missing, 404, "not_found", "route.not_found")
        for path in ("/openapi.json", "/contract/openapi.yaml", "/docs"):
            for method in ("POST", "PUT", "DELETE"):
                refused = client.request(method, path)
                assert_envelope(refused, 405, "invalid_request", "method.not_allowed")
                assert refused.headers["allow"] == "GET, HEAD", (method, path)
