"""The reads under ``/_sim`` that a watcher of a served simulator needs (HAR-31).

Each is a view of state the platform already holds (organizations, any organization's sessions,
the faults in force, the pool) or of the facade's ring of HTTP requests, behind the admin token,
with its query checked like ``/v1``'s. Driven in process over ASGI, on the manual clock.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.config import AdminConfig, SimConfig
from sim.errors import Unprocessable
from sim.platform import Platform
from tests.asgi.support import ADMIN, ADMIN_TOKEN, Org, assert_envelope, make_org, session_body

READS = (
    "/_sim/organizations",
    "/_sim/sessions?org_id=org_x",
    "/_sim/sessions/sess_x",
    "/_sim/faults",
    "/_sim/pool",
    "/_sim/requests",
)


def _served(config: SimConfig | None = None) -> tuple[Platform, httpx.Client, Org, Org]:
    platform = Platform.create(config)
    acme = make_org(platform, "Acme <b>Corp</b>", "enterprise")
    globex = make_org(platform, "Globex", "starter")
    app = create_app(platform, admin_token=ADMIN_TOKEN)
    client = httpx.Client(transport=SyncASGITransport(app), base_url="http://sim")
    return platform, client, acme, globex


def _create(client: httpx.Client, org: Org, **body: Any) -> dict[str, Any]:
    """A session of ``org``'s, made with a fresh key (a key holds one live session at a time)."""
    key = client.post("/_sim/keys", json={"org_id": org.id}, headers=ADMIN).json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    created = client.post("/v1/sessions", json=session_body(**body), headers=headers)
    assert created.status_code == 201, created.text
    return dict(created.json())


def _get(client: httpx.Client, path: str, **params: str) -> dict[str, Any]:
    response = client.get(path, params=params, headers=ADMIN)
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.req("HAR-31", "SIM-8")
@pytest.mark.parametrize("path", READS)
def test_every_read_needs_the_admin_token(path: str) -> None:
    _, client, acme, _ = _served()
    assert_envelope(client.get(path), 401, "authentication", "admin_token.missing")
    wrong = {"Authorization": "Bearer simadmin_wrong"}
    assert_envelope(client.get(path, headers=wrong), 401, "authentication", "admin_token.invalid")
    # A tenant's key is not the admin token either.
    assert_envelope(
        client.get(path, headers=acme.auth()), 401, "authentication", "admin_token.invalid"
    )


@pytest.mark.req("HAR-31")
def test_without_an_admin_token_the_reads_do_not_exist_and_no_request_is_kept() -> None:
    platform = Platform.create()
    app = create_app(platform)
    client = httpx.Client(transport=SyncASGITransport(app), base_url="http://sim")
    assert client.get("/_sim/requests", headers=ADMIN).status_code == 404
    operations = app.router.routes[-1].app  # the catch-all mount of the operations
    assert operations.requests is None


@pytest.mark.req("HAR-31")
def test_organizations_and_their_sessions_by_status() -> None:
    platform, client, acme, globex = _served()
    first = _create(client, acme, metadata={"note": "<img src=x onerror=alert(1)>"})
    second = _create(client, acme)
    client.post(f"/v1/sessions/{second['id']}/end", headers=acme.auth())
    platform.advance(10)
    orgs = _get(client, "/_sim/organizations")["data"]
    assert [(o["id"], o["name"], o["plan"]) for o in orgs] == [
        (acme.id, "Acme <b>Corp</b>", "enterprise"),
        (globex.id, "Globex", "starter"),
    ]
    assert orgs[0]["concurrency_limit"] >= 1

    listed = _get(client, "/_sim/sessions", org_id=acme.id)
    assert listed["total"] == 2
    assert listed["counts"] == {"running": 1, "canceled": 1}
    assert [s["id"] for s in listed["data"]] == [second["id"], first["id"]]  # newest first
    mine = client.get(f"/v1/sessions/{first['id']}", headers=acme.auth()).json()
    assert listed["data"][1] == mine  # what the tenant's own key reads
    assert listed["data"][1]["metadata"] == {"note": "<img src=x onerror=alert(1)>"}

    running = _get(client, "/_sim/sessions", org_id=acme.id, status="running")
    assert [s["id"] for s in running["data"]] == [first["id"]]
    assert running["counts"] == listed["counts"]  # the counts cover every status
    assert [s["id"] for s in _get(client, "/_sim/sessions", org_id=acme.id, limit="1")["data"]] == [
        second["id"]
    ]
    assert _get(client, "/_sim/sessions", org_id=globex.id) == {
        "object": "list",
        "org_id": globex.id,
        "total": 0,
        "counts": {},
        "data": [],
    }
    one = _get(client, f"/_sim/sessions/{first['id']}")
    assert one == {**mine, "org_id": acme.id}


@pytest.mark.req("HAR-31", "ERR-1")
@pytest.mark.parametrize(
    ("params", "status", "code", "param"),
    [
        ({}, 422, "validation.required", "org_id"),
        ({"org_id": "org_nobody"}, 404, "organization.not_found", None),
        ({"org_id": "ORG", "status": "dancing"}, 422, "validation.enum", "status"),
        ({"org_id": "ORG", "limit": "0"}, 422, "validation.range", "limit"),
        ({"org_id": "ORG", "limit": "101"}, 422, "validation.range", "limit"),
        ({"org_id": "ORG", "limit": "ten"}, 422, "validation.range", "limit"),
        ({"org_id": "ORG", "colour": "red"}, 422, "validation.unknown_parameter", "colour"),
    ],
)
def test_a_bad_sessions_query_is_refused_with_the_envelope(
    params: dict[str, str], status: int, code: str, param: str | None
) -> None:
    _, client, acme, _ = _served()
    query = {name: acme.id if value == "ORG" else value for name, value in params.items()}
    response = client.get("/_sim/sessions", params=query, headers=ADMIN)
    type_ = {404: "not_found", 422: "unprocessable"}[status]
    assert_envelope(response, status, type_, code, param)


@pytest.mark.req("HAR-31")
def test_an_unknown_session_is_404_and_a_repeated_parameter_is_refused() -> None:
    _, client, acme, _ = _served()
    response = client.get("/_sim/sessions/sess_nobody", headers=ADMIN)
    assert_envelope(response, 404, "not_found", "session.not_found")
    twice = client.get(f"/_sim/sessions?org_id={acme.id}&org_id={acme.id}", headers=ADMIN)
    assert_envelope(twice, 422, "unprocessable", "validation.type", "org_id")


@pytest.mark.req("HAR-31", "SIM-9")
def test_the_active_faults_show_each_fault_with_its_parameters_until_it_is_cleared() -> None:
    platform, client, acme, _ = _served()
    assert _get(client, "/_sim/faults")["data"] == []
    crashed = _create(client, acme)
    losing = _create(client, acme)
    platform.advance(10)
    configured = platform.config.scheduler.workers

    def post(path: str, body: dict[str, Any]) -> None:
        response = client.post(f"/_sim/faults/{path}", json=body, headers=ADMIN)
        assert response.status_code == 200, response.text

    post("worker_crash", {"session_id": crashed["id"]})
    post("capacity", {"workers": 3})
    post("slow_startup", {"extra_seconds": 7.5, "duration": 600})
    post("heartbeat_loss", {"session_id": losing["id"], "duration": 5})
    post("purge_failure", {"enabled": True})
    active = {fault.pop("fault"): fault for fault in _get(client, "/_sim/faults")["data"]}
    now = platform.clock.now
    assert active == {
        "worker_crash": {"restarting_workers": 1, "crashes": 1},
        "capacity": {"workers": 3, "configured": configured},
        "slow_startup": {
            "extra_seconds": 7.5,
            "distribution": {"kind": "constant", "value": 7.5},
            "until": platform.clock.timestamp(now + 600),
        },
        "heartbeat_loss": {"session_id": losing["id"], "until": platform.clock.timestamp(now + 5)},
        "purge_failure": {"enabled": True},
    }
    # Clearing, as the console does: the configured pool, no extra seconds, purges that work.
    post("capacity", {"workers": configured})
    post("slow_startup", {"extra_seconds": 0})
    post("purge_failure", {"enabled": False})
    remaining = [fault["fault"] for fault in _get(client, "/_sim/faults")["data"]]
    assert remaining == ["worker_crash", "heartbeat_loss"]
    platform.advance(platform.config.scheduler.worker_restart_seconds + 1)
    assert _get(client, "/_sim/faults")["data"] == []  # the worker is back, the loss is over


@pytest.mark.req("HAR-31", "SIM-1")
def test_the_pool_is_sampled_on_the_simulated_clock_however_it_moves() -> None:
    config = SimConfig(admin=AdminConfig(pool_sample_seconds=5, pool_samples_kept=10))
    platform, client, acme, _ = _served(config)
    before = _get(client, "/_sim/pool")
    assert before["samples"] == [] and before["sample_every_seconds"] is None
    platform.admin.sample_pool(config.admin.pool_sample_seconds, config.admin.pool_samples_kept)
    with pytest.raises(RuntimeError):
        platform.admin.sample_pool(1, 1)
    _create(client, acme)
    _create(client, acme)
    client.post("/_sim/clock/advance", json={"seconds": 30}, headers=ADMIN)  # one jump
    pool = _get(client, "/_sim/pool")
    seconds = [sample["seconds"] for sample in pool["samples"]]
    assert seconds == [0, 5, 10, 15, 20, 25, 30]  # every grid instant the jump passed
    assert pool["samples"][0]["busy"] == 0 and pool["samples"][-1]["busy"] == 2
    assert pool["busy"] == 2 and pool["idle"] == config.scheduler.workers - 2
    assert pool["configured_workers"] == config.scheduler.workers
    assert pool["sample_every_seconds"] == 5
    platform.advance(100)
    kept = [sample["seconds"] for sample in _get(client, "/_sim/pool")["samples"]]
    assert kept == [85 + 5 * i for i in range(10)]  # the newest ten


@pytest.mark.req("HAR-31", "SIM-8")
def test_the_last_requests_carry_status_code_request_id_key_and_the_session_touched() -> None:
    _, client, acme, globex = _served()
    created = client.post("/v1/sessions", json=session_body(), headers=acme.auth())
    session_id = created.json()["id"]
    read = client.get(f"/v1/sessions/{session_id}", headers=acme.auth())
    refused = client.post("/v1/sessions", json=session_body(), headers=globex.auth("revoked"))
    missing = client.get("/v1/nowhere", headers=acme.auth())
    scoped = client.get("/v1/sessions", headers=acme.auth("runs_read"))
    client.get("/_sim/clock", headers=ADMIN)  # the admin's own calls are not API calls
    calls = _get(client, "/_sim/requests")["data"]
    assert [call["request_id"] for call in calls] == [
        response.headers["x-request-id"] for response in (scoped, missing, refused, read, created)
    ]
    handle = acme.keys["unrestricted"][:14]
    assert calls[-1] == {
        "object": "request",
        "request_id": created.headers["x-request-id"],
        "at": calls[-1]["at"],
        "method": "POST",
        "path": "/v1/sessions",
        "operation_id": "createSession",
        "status": 201,
        "code": None,
        "key_id": handle,
        "org_id": acme.id,
        "resource_id": session_id,
        "replayed": False,
    }
    by_id = {call["request_id"]: call for call in calls}
    assert by_id[read.headers["x-request-id"]]["resource_id"] == session_id
    revoked = by_id[refused.headers["x-request-id"]]
    assert (revoked["status"], revoked["code"], revoked["org_id"]) == (
        401,
        refused.json()["error"]["code"],
        None,
    )
    assert revoked["key_id"] == globex.keys["revoked"][:14]  # a refused key is still named
    assert (
        by_id[missing.headers["x-request-id"]]["status"],
        by_id[missing.headers["x-request-id"]]["code"],
    ) == (404, "route.not_found")
    assert by_id[scoped.headers["x-request-id"]]["status"] == 403
    assert all(acme.keys["unrestricted"] not in str(call) for call in calls)  # never the secret


@pytest.mark.req("HAR-31")
def test_the_last_requests_filter_by_key_and_status() -> None:
    _, client, acme, globex = _served()
    ok = client.post("/v1/sessions", json=session_body(), headers=acme.auth())
    bad = client.post("/v1/sessions", json={"avatar_id": 7}, headers=acme.auth())
    other = client.get("/v1/sessions", headers=globex.auth())

    def ids(**params: str) -> list[str]:
        return [call["request_id"] for call in _get(client, "/_sim/requests", **params)["data"]]

    rid = [response.headers["x-request-id"] for response in (ok, bad, other)]
    assert ids(key_id=acme.keys["unrestricted"][:14]) == [rid[1], rid[0]]
    assert ids(key_id=acme.keys["unrestricted"]) == [rid[1], rid[0]]  # a whole key: its handle
    assert ids(status="4xx") == [rid[1]]
    assert ids(status="422") == [rid[1]]
    assert ids(status="2XX") == [rid[2], rid[0]]
    assert ids(status="201", key_id=globex.keys["unrestricted"]) == []
    assert ids(limit="1") == [rid[2]]
    refused = client.get("/_sim/requests", params={"status": "teapot"}, headers=ADMIN)
    assert_envelope(refused, 422, "unprocessable", "validation.type", "status")


@pytest.mark.req("HAR-31")
def test_the_request_log_is_a_ring_of_its_configured_size() -> None:
    config = SimConfig(admin=AdminConfig(request_log_size=3))
    _, client, acme, _ = _served(config)
    sent = [client.get("/v1/sessions", headers=acme.auth()) for _ in range(5)]
    kept = [call["request_id"] for call in _get(client, "/_sim/requests")["data"]]
    assert kept == [response.headers["x-request-id"] for response in reversed(sent[2:])]


@pytest.mark.req("SIM-8")
@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"scopes": ["runs:read", "sessions:write"]}, "scopes.1"),
        ({"environment": "dev"}, "environment"),
    ],
)
def test_a_key_with_an_unknown_scope_or_environment_is_refused_in_process_as_by_url(
    body: dict[str, Any], param: str
) -> None:
    """The same call means the same thing: the served route and the admin object both refuse a
    scope or environment the simulator does not know, with the same type, code and param, and
    neither makes a key."""
    platform, client, acme, _ = _served()
    before = len(platform.accounts.keys(acme.id))
    served = client.post("/_sim/keys", json={"org_id": acme.id, **body}, headers=ADMIN)
    assert served.status_code == 422
    error = served.json()["error"]
    with pytest.raises(Unprocessable) as refused:
        platform.admin.create_key(acme.id, **body)
    assert (refused.value.type, refused.value.code, refused.value.param) == (
        error["type"], error["code"], error["param"]
    )  # fmt: skip
    assert (error["code"], error["param"]) == ("validation.enum", param)
    assert len(platform.accounts.keys(acme.id)) == before
