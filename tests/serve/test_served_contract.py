"""``avatar-sim serve`` serves its own contract, and tools pointed at it work on any port.

A real subprocess on a free loopback port: the documents it answers are the project's files, the
docs page loads only same-origin assets (it must work offline), and schemathesis loading the
spec by URL sends its requests to the port the server is on, not to a port named in the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
import yaml

from harness.contract import derive_profile, load_spec
from harness.contract.loader import OPENAPI_FILE, default_spec_dir
from tests.serve.support import Served, served

pytestmark = pytest.mark.req("SIM-8")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("serve-contract"), "--manual-clock") as running:
        yield running


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with server.client() as client:
        yield client


def test_the_documents_are_served_outside_v1_without_a_key(http: httpx.Client) -> None:
    spec = load_spec()
    as_json = http.get("/openapi.json")
    assert as_json.status_code == 200
    assert as_json.headers["content-type"].startswith("application/json")
    assert as_json.json() == spec
    as_yaml = http.get("/openapi.yaml")
    assert as_yaml.status_code == 200
    assert as_yaml.text == (default_spec_dir() / OPENAPI_FILE).read_text(encoding="utf-8")
    profile = http.get("/contract/openapi.json")
    assert profile.status_code == 200
    assert profile.json() == derive_profile(spec)
    assert yaml.safe_load(http.get("/contract/openapi.yaml").text) == derive_profile(spec)
    for response in (as_json, as_yaml, profile):
        assert response.headers["x-request-id"].startswith("req_")


@pytest.mark.req("HAR-1")
def test_a_tool_loading_the_served_spec_reaches_this_port(server: Served) -> None:
    schema = schemathesis.openapi.from_url(f"{server.base_url}/openapi.json")
    assert schema.get_base_url().rstrip("/") == server.base_url
    response = schema["/v1/status"]["GET"].Case().call()
    assert response.status_code == 200
    assert str(response.request.url) == f"{server.base_url}/v1/status"


def test_the_docs_page_needs_nothing_from_the_network(http: httpx.Client) -> None:
    page = http.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert "validatorUrl: null" in html  # Swagger UI's default badge calls an online validator
    assert not re.search(r"(?:src|href)=\"(?!/)", html), "every asset must be same-origin"
    assets = re.findall(r"(?:src|href)=\"(/[^\"]+)\"", html)
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    for asset in assets:
        answer = http.get(asset)
        assert answer.status_code == 200, asset
        assert len(answer.content) > 100, asset
    documents = re.findall(r"url: \"([^\"]+)\"", html)
    assert sorted(documents) == ["/contract/openapi.json", "/openapi.json"]
    for document in documents:
        assert http.get(document).json()["openapi"].startswith("3.1")


def test_servers_name_no_fixed_port(http: httpx.Client) -> None:
    servers = http.get("/openapi.json").json()["servers"]
    assert servers[0]["url"] == "/"  # relative: the host and port the document came from
    for entry in servers:
        assert not re.search(r":\d+", entry["url"]), entry
