"""``tests.conformance.served``: the facade over real HTTP in a thread of the test process, seeded
like ``avatar-sim serve``, its clock at a time factor, behind edits and their configuration."""

from __future__ import annotations

import socket
import time
from typing import Any

import httpx
import pytest

from harness.conformance.inputs import DEFAULT_TRANSPORT
from tests.conformance.edits import Call, Edits, Reply
from tests.conformance.served import served, served_app

pytestmark = pytest.mark.req("HAR-2", "SIM-8")

SESSION = {"avatar_id": "av_stock_mock", "transport": dict(DEFAULT_TRANSPORT), "quality": "mock"}


def test_every_key_works_over_http_as_its_kind_says() -> None:
    with served(time_factor=None) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        with server.client() as client:
            assert client.get("/v1/models").status_code == 200
            [mine] = client.get("/v1/assets").json()["data"]
        with server.client(server.other_org_key) as other:
            [theirs] = other.get("/v1/assets").json()["data"]
            assert other.get(f"/v1/assets/{mine['id']}/content").status_code == 404
        assert mine["id"] != theirs["id"]
        with server.client(server.keys["revoked"]) as revoked:
            assert revoked.get("/v1/models").status_code == 401
        with server.client(server.keys["runs_write"]) as writer:
            refused = writer.get("/v1/runs")
            assert refused.status_code == 403
            assert refused.json()["error"]["code"] == "api_key.scope_required"
        with server.client(server.keys["runs_read"]) as reader:
            assert reader.get("/v1/runs").status_code == 200
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers) as admin:
            assert admin.get("/_sim/clock").status_code == 200


def test_credentials_leave_the_admin_token_out_unless_asked() -> None:
    with served(time_factor=None) as server:
        plain, with_admin = server.credentials(), server.credentials(admin=True)
        assert plain.admin is None and with_admin.admin == server.admin_token
        assert plain.api == server.keys["unrestricted"]
        assert plain.other_org == server.other_keys["unrestricted"]
        assert (plain.runs_read, plain.runs_write, plain.revoked) == (
            server.keys["runs_read"],
            server.keys["runs_write"],
            server.keys["revoked"],
        )
        target = server.target()
        try:
            assert target.request("GET", "/v1/billing/quota").status == 200
            assert target.request("GET", "/v1/models", role="revoked").status == 401
        finally:
            target.close()
        assert [o["plan"] for o in server.organizations] == ["enterprise", "starter"]


def test_the_clock_runs_at_the_time_factor() -> None:
    factor, pause = 0.05, 0.3
    with served(time_factor=factor) as server:
        before_wall = time.monotonic()
        first = server.sim_seconds()
        time.sleep(pause)
        second = server.sim_seconds()
        after_wall = time.monotonic()
        with server.client() as client:
            third = client.get("/_sim/clock", headers=server.admin_headers).json()["seconds"]
    # The two reads bracket the pause and are bracketed by the wall readings, and the mapping is
    # linear, so the simulated span is within these bounds exactly (no tolerance needed).
    assert pause / factor <= second - first <= (after_wall - before_wall) / factor
    assert third >= second


def test_a_manual_clock_stands_still_until_advanced() -> None:
    with served(time_factor=None) as server:
        first = server.sim_seconds()
        time.sleep(0.05)
        assert server.sim_seconds() == first
        with httpx.Client(base_url=server.base_url, headers=server.admin_headers) as admin:
            admin.post("/_sim/clock/advance", json={"seconds": 30})
        assert server.sim_seconds() == first + 30


def _tagged(call: Call, reply: Reply) -> None:
    if call.path == "/v1/models":
        reply.set_header("X-Edited", f"{call.now():.0f}")


def test_an_edit_takes_effect_and_sees_the_served_clock() -> None:
    with served(Edits(response=(_tagged,)), time_factor=None) as server, server.client() as client:
        answer = client.get("/v1/models")
        assert answer.headers["x-edited"] == f"{server.sim_seconds():.0f}"
        assert "x-edited" not in client.get("/v1/status").headers


def test_a_configuration_change_takes_effect() -> None:
    edits = Edits(config={"billing.plans.enterprise.max_session_duration_seconds": 1800})
    with served(edits, time_factor=None) as server, server.client() as client:
        created = client.post("/v1/sessions", json={**SESSION, "max_duration_seconds": 3600})
        assert created.status_code == 201, created.text
        assert created.json()["max_duration_seconds"] == 1800
        plan = server.on_loop(lambda p: p.config.billing.plan("enterprise"))
        assert plan.max_session_duration_seconds == 1800
    with served(time_factor=None) as plain, plain.client() as client:
        created = client.post("/v1/sessions", json={**SESSION, "max_duration_seconds": 3600})
        assert created.json()["max_duration_seconds"] == 3600


def test_a_wrapper_sits_inside_the_clock_sync_and_outside_the_edits() -> None:
    seen: list[Any] = []

    def wrap(app: Any, keys: dict[str, str]) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                seen.append((scope["path"], sorted(keys)))
            await app(scope, receive, send)

        return wrapped

    edits = Edits(response=(_tagged,))
    with served(edits, time_factor=None, wrap=wrap) as server, server.client() as client:
        assert "x-edited" in client.get("/v1/models").headers
    assert seen == [("/v1/models", ["revoked", "runs_read", "runs_write", "unrestricted"])]


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def test_any_asgi_app_can_be_served_and_stopping_frees_the_port() -> None:
    async def teapot(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"short and stout"})

    with served_app(teapot) as listening, listening.client() as client:
        answer = client.get("/anything")
        port = int(listening.base_url.rsplit(":", 1)[1])
    assert (answer.status_code, answer.content) == (418, b"short and stout")
    assert _refused(port)
