"""Bearer authentication, scopes and tenant isolation over HTTP (AUTH-1 … AUTH-7)."""

from __future__ import annotations

import pytest
from httpx import Client

from tests.asgi.support import Org, assert_envelope, session_body

PROTECTED = [
    ("GET", "/v1/sessions"),
    ("POST", "/v1/sessions"),
    ("GET", "/v1/sessions/sess_01JAAAAAAAAAAAAAAAAAAAAAAA"),
    ("POST", "/v1/sessions/sess_01JAAAAAAAAAAAAAAAAAAAAAAA/end"),
    ("POST", "/v1/pipecat/sessions"),
    ("GET", "/v1/avatars"),
    ("POST", "/v1/avatars"),
    ("GET", "/v1/avatars/av_stock_mock"),
    ("POST", "/v1/run/sim/echo-text"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA"),
    ("DELETE", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA"),
    ("GET", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA/status"),
    ("GET", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA/events"),
    ("POST", "/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAA/cancel"),
    ("GET", "/v1/assets"),
    ("GET", "/v1/assets/asset_01JAAAAAAAAAAAAAAAAAAAAAAA/content"),
    ("GET", "/v1/models"),
    ("GET", "/v1/usage"),
    ("GET", "/v1/billing/quota"),
]


@pytest.mark.req("AUTH-2", "AUTH-3", "EP-MODEL-1")
@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_every_protected_operation_needs_a_key(client: Client, method: str, path: str) -> None:
    response = client.request(method, path)
    assert_envelope(response, 401, "authentication", "api_key.missing")


@pytest.mark.req("AUTH-1", "AUTH-3", "AUTH-6", "EP-MODEL-1")
@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        ("", "api_key.missing"),
        ("sk_live_abcdefghijklmnop", "api_key.malformed"),
        ("Basic dXNlcjpwYXNz", "api_key.malformed"),
        ("Bearer", "api_key.malformed"),
        ("Bearer not-a-key", "api_key.malformed"),
        ("Bearer sk_live_0000000000000000000000000000000a", "api_key.invalid"),
        ("Bearer emb_01JAAAAAAAAAAAAAAAAAAAAAAA", "api_key.invalid"),
    ],
)
def test_bad_keys_answer_401(client: Client, authorization: str, code: str) -> None:
    response = client.get("/v1/models", headers={"Authorization": authorization})
    assert_envelope(response, 401, "authentication", code)


@pytest.mark.req("AUTH-3", "EP-MODEL-1")
def test_a_revoked_key_answers_401_and_a_working_one_200(client: Client, org: Org) -> None:
    revoked = client.get("/v1/models", headers=org.auth("revoked"))
    assert_envelope(revoked, 401, "authentication", "api_key.revoked")
    ok = client.get("/v1/models", headers=org.auth())
    assert ok.status_code == 200
    assert ok.json()["object"] == "list"


@pytest.mark.req("AUTH-2", "EP-STATUS-1", "EP-BILL-1")
@pytest.mark.parametrize("path", ["/v1/status", "/v1/billing/plans"])
def test_public_operations_need_no_key_and_ignore_a_bad_one(client: Client, path: str) -> None:
    assert client.get(path).status_code == 200
    assert client.get(path, headers={"Authorization": "Bearer nonsense"}).status_code == 200


@pytest.mark.req("AUTH-4", "AUTH-5")
def test_scoped_keys_reach_only_their_scopes(client: Client, org: Org) -> None:
    write_only = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}, headers=org.auth("runs_write")
    )
    assert_envelope(write_only, 403, "permission", "api_key.scope_required")
    read_only = client.get("/v1/runs", headers=org.auth("runs_read"))
    assert read_only.status_code == 200
    for kind in ("runs_read", "runs_write"):
        sessions = client.get("/v1/sessions", headers=org.auth(kind))
        assert_envelope(sessions, 403, "permission", "api_key.scope_required")
        assert client.get("/v1/models", headers=org.auth(kind)).status_code == 200
    created = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}, headers=org.auth()
    ).json()
    cancel_read = client.post(f"/v1/runs/{created['id']}/cancel", headers=org.auth("runs_read"))
    assert_envelope(cancel_read, 403, "permission", "api_key.scope_required")
    cancel_write = client.post(f"/v1/runs/{created['id']}/cancel", headers=org.auth("runs_write"))
    assert cancel_write.status_code == 200


@pytest.mark.req("AUTH-7", "EP-SESS-8", "EP-AV-3")
def test_another_organizations_objects_are_not_found_and_never_listed(
    client: Client, org: Org, other_org: Org
) -> None:
    session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    run = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}, headers=org.auth()
    ).json()
    foreign = other_org.auth()
    for method, path, code in [
        ("GET", f"/v1/sessions/{session['id']}", "session.not_found"),
        ("POST", f"/v1/sessions/{session['id']}/end", "session.not_found"),
        ("GET", f"/v1/runs/{run['id']}", "run.not_found"),
        ("GET", f"/v1/runs/{run['id']}/status", "run.not_found"),
        ("GET", f"/v1/runs/{run['id']}/events", "run.not_found"),
        ("POST", f"/v1/runs/{run['id']}/cancel", "run.not_found"),
    ]:
        response = client.request(method, path, headers=foreign)
        assert response.status_code == 404, (method, path)
        assert response.json()["error"]["code"] == code
    assert client.get("/v1/sessions", headers=foreign).json()["data"] == []
    assert client.get("/v1/runs", headers=foreign).json()["data"] == []
    # ... and the owner still sees the session unchanged.
    mine = client.get(f"/v1/sessions/{session['id']}", headers=org.auth()).json()
    assert mine["status"] == session["status"]
