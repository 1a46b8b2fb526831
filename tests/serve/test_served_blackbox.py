"""Black-box tests of ``avatar-sim serve``: a real subprocess on a loopback port, driven with httpx.

One manual-clock server is shared by the module; each test creates its own organization through
``POST /_sim/organizations`` so tests never share keys, rate windows or concurrency slots.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.serve.support import Served, receiver, served

AVATAR = "av_stock_aria"


def _session_body(room: str, **extra: Any) -> dict[str, Any]:
    transport = {
        "type": "livekit",
        "url": "wss://rooms.example.invalid",
        "room_name": room,
        "worker_token": "wt_secret",
    }
    return {"avatar_id": AVATAR, "transport": transport, **extra}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("serve"), "--manual-clock") as running:
        yield running


class Api:
    """A thin client of the served simulator for one freshly created organization."""

    def __init__(self, server: Served, plan: str = "starter") -> None:
        self.server = server
        self.http = server.client()
        created = self.admin("POST", "/organizations", {"name": f"Org {plan}", "plan": plan})
        self.org_id: str = created["id"]
        self.keys: dict[str, str] = created["keys"]

    def close(self) -> None:
        self.http.close()

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(
            method, f"/_sim{path}", json=body, headers=self.server.admin_headers
        )
        assert response.status_code < 300, response.text
        return response.json()

    def advance(self, seconds: float) -> None:
        self.admin("POST", "/clock/advance", {"seconds": seconds})

    def call(self, method: str, path: str, key: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.keys['unrestricted']}"}
        headers.update(kwargs.pop("headers", {}))
        return self.http.request(method, path, headers=headers, **kwargs)

    def session(self, session_id: str) -> dict[str, Any]:
        response = self.call("GET", f"/v1/sessions/{session_id}")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


ApiFactory = Callable[..., Api]


@pytest.fixture
def make_api() -> Iterator[ApiFactory]:
    """``make_api(server, plan)``: an ``Api`` for a new organization, closed after the test."""
    made: list[Api] = []

    def make(server: Served, plan: str = "starter") -> Api:
        made.append(Api(server, plan))
        return made[-1]

    yield make
    for api in made:
        api.close()


@pytest.mark.req("SIM-8", "AUTH-3", "AUTH-5")
def test_the_keys_file_names_working_keys_of_every_kind(server: Served) -> None:
    organizations = server.keys["organizations"]
    assert len(organizations) >= 2
    assert "enterprise" in {o["plan"] for o in organizations}
    assert server.base_url.startswith("http://127.0.0.1:")
    with server.client() as http:
        for org in organizations:
            keys = org["keys"]

            def get(path: str, key: str) -> int:
                return http.get(path, headers={"Authorization": f"Bearer {key}"}).status_code

            assert get("/v1/models", keys["unrestricted"]) == 200
            assert get("/v1/runs", keys["runs_read"]) == 200
            assert get("/v1/runs", keys["runs_write"]) == 403
            assert get("/v1/models", keys["revoked"]) == 401
        clock = http.get("/_sim/clock", headers=server.admin_headers)
        assert clock.status_code == 200
        assert set(clock.json()) == {"now", "seconds"}
        assert http.get("/_sim/clock").status_code == 401


@pytest.mark.req("SIM-8", "SES-ST-1", "SES-ST-3", "SES-ST-4", "SES-ST-5", "SES-ST-8")
def test_a_session_lives_its_whole_life_on_the_admin_clock(
    server: Served, make_api: ApiFactory
) -> None:
    api = make_api(server, "enterprise")
    created = api.call("POST", "/v1/sessions", json=_session_body("life"))
    assert created.status_code == 201, created.text
    session = created.json()
    assert session["status"] == "queued"
    assert "worker_token" not in session["transport"]

    assert api.session(session["id"])["status"] == "queued"  # nothing moves without the clock
    api.advance(20)
    running = api.session(session["id"])
    assert running["status"] == "running"
    assert running["started_at"] is not None
    assert running["first_frame_at"] is not None

    ending = api.call("POST", f"/v1/sessions/{session['id']}/end")
    assert (ending.status_code, ending.json()["status"]) == (200, "ending")
    api.advance(30)
    ended = api.session(session["id"])
    assert ended["status"] == "ended"
    again = api.call("POST", f"/v1/sessions/{session['id']}/end")
    assert (again.status_code, again.json()) == (200, ended)

    queued = api.call("POST", "/v1/sessions", json=_session_body("cancel")).json()
    canceled = api.call("POST", f"/v1/sessions/{queued['id']}/end")
    assert (canceled.status_code, canceled.json()["status"]) == (200, "canceled")
    api.advance(60)
    assert api.session(queued["id"])["status"] == "canceled"


@pytest.mark.req("SIM-8", "SES-ST-2", "SES-ST-6", "SES-ST-7", "EV-3")
def test_timers_and_capacity_loss_end_sessions_and_signed_webhooks_say_why(
    server: Served, make_api: ApiFactory
) -> None:
    api = make_api(server, "pro")
    with receiver() as hooks:
        endpoint = api.admin(
            "POST",
            "/webhooks",
            {"org_id": api.org_id, "url": hooks.url, "event_types": ["session.*"]},
        )
        secret = endpoint["secret"]

        def ended(session_id: str) -> Any:
            return lambda p: (
                p["type"] in ("session.ended", "session.failed")
                and (p["data"]["object"]["id"] == session_id)
            )

        idle = api.call("POST", "/v1/sessions", json=_session_body("idle", idle_timeout_seconds=5))
        api.advance(60)
        hook = hooks.wait_for(ended(idle.json()["id"]), timeout=10)
        assert hook.json()["data"]["reason"] == "idle_timeout"
        assert api.session(idle.json()["id"])["status"] == "ended"
        # Signed the Standard Webhooks way at the attempt's simulated time.
        when = datetime.fromtimestamp(int(hook.headers["webhook-timestamp"]), UTC)
        assert (
            Webhook(secret).sign(hook.headers["webhook-id"], when, hook.body.decode())
            == (hook.headers["webhook-signature"])
        )

        body = _session_body("long", idle_timeout_seconds=600, max_duration_seconds=30)
        capped = api.call("POST", "/v1/sessions", json=body)
        assert capped.json()["max_duration_seconds"] == 30
        api.advance(120)
        hook = hooks.wait_for(ended(capped.json()["id"]), timeout=10)
        assert hook.json()["data"]["reason"] == "max_duration"

        workers = api.admin("POST", "/faults/capacity", {"workers": 0})
        try:
            doomed = api.call("POST", "/v1/sessions", json=_session_body("doomed"))
            assert doomed.status_code == 201, doomed.text
            api.advance(20)
            failed = api.session(doomed.json()["id"])
            assert failed["status"] == "failed"
            assert failed["error"]["code"] == "no_capacity"
            hook = hooks.wait_for(ended(doomed.json()["id"]), timeout=10)
            assert hook.json()["type"] == "session.failed"
        finally:
            api.admin("POST", "/faults/capacity", {"workers": 8})
        assert workers is not None


@pytest.mark.req("SIM-8", "LIM-3", "LIM-4", "EP-SESS-5")
def test_the_eleventh_create_in_a_minute_is_refused_with_rate_limit_headers(
    server: Served, make_api: ApiFactory
) -> None:
    api = make_api(server)
    for n in range(10):
        created = api.call("POST", "/v1/sessions", json=_session_body(f"rate-{n}"))
        assert created.status_code == 201, created.text
        assert created.headers["x-ratelimit-limit"] == "10"
        assert created.headers["x-ratelimit-remaining"] == str(9 - n)
        api.call("POST", f"/v1/sessions/{created.json()['id']}/end")
    refused = api.call("POST", "/v1/sessions", json=_session_body("rate-11"))
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit", "rate_limited")
    assert error["request_id"] == refused.headers["x-request-id"]
    assert refused.headers["x-ratelimit-limit"] == "10"
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert int(refused.headers["x-ratelimit-reset"]) > 0
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    api.advance(61)
    assert api.call("POST", "/v1/sessions", json=_session_body("later")).status_code == 201


@pytest.mark.req("SIM-8", "LIM-5", "CONV-7")
def test_an_idempotent_retry_replays_and_a_changed_body_conflicts(
    server: Served, make_api: ApiFactory
) -> None:
    api = make_api(server)
    key = {"Idempotency-Key": "retry-me-1"}
    body = _session_body("idem", metadata={"order": 7})
    first = api.call("POST", "/v1/sessions", json=body, headers=key)
    assert first.status_code == 201, first.text
    replay = api.call("POST", "/v1/sessions", json=body, headers=key)
    assert replay.status_code == 201
    assert replay.json() == first.json()
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.headers["x-request-id"] != first.headers["x-request-id"]
    changed = api.call("POST", "/v1/sessions", json={**body, "quality": "pro"}, headers=key)
    assert changed.status_code == 409
    assert changed.json()["error"]["type"] == "conflict"
    listed = api.call("GET", "/v1/sessions").json()["data"]
    assert [s["id"] for s in listed] == [first.json()["id"]]


@pytest.mark.req("SIM-8", "AUTH-7", "EP-SESS-8")
def test_another_organization_cannot_see_or_end_a_session(
    server: Served, make_api: ApiFactory
) -> None:
    owner, stranger = make_api(server, "enterprise"), make_api(server, "free")
    session = owner.call("POST", "/v1/sessions", json=_session_body("private")).json()
    for method, path in (
        ("GET", f"/v1/sessions/{session['id']}"),
        ("POST", f"/v1/sessions/{session['id']}/end"),
    ):
        response = stranger.call(method, path)
        assert response.status_code == 404
        assert response.json()["error"]["type"] == "not_found"
    assert stranger.call("GET", "/v1/sessions").json()["data"] == []
    assert owner.session(session["id"])["status"] == "queued"


@pytest.mark.req("SIM-8", "SIM-1", "SES-ST-7")
def test_with_a_time_factor_the_idle_timeout_fires_with_no_traffic(
    tmp_path: Path, make_api: ApiFactory
) -> None:
    """At factor 0.05 a 20 s idle timeout is one wall second; only the webhook tells us."""
    with served(tmp_path, "--time-factor", "0.05") as running, receiver() as hooks:
        api = make_api(running, "enterprise")
        api.admin(
            "POST",
            "/webhooks",
            {"org_id": api.org_id, "url": hooks.url, "event_types": ["session.ended"]},
        )
        created = api.call("POST", "/v1/sessions", json=_session_body("t", idle_timeout_seconds=20))
        assert created.status_code == 201, created.text
        sent = time.monotonic()
        hook = hooks.wait_for(lambda p: p["data"]["object"]["id"] == created.json()["id"], 10)
        waited = hook.at - sent
        assert hook.json()["data"]["reason"] == "idle_timeout"
        # boot + first frame + 20 s idle, at 0.05 wall seconds per simulated second
        assert 20 * 0.05 <= waited <= 3.0
        assert api.session(created.json()["id"])["status"] == "ended"
        code, took = running.stop(signal.SIGTERM)
        assert code == 0
        assert took < 5.0


@pytest.mark.req("SIM-8")
def test_sigint_shuts_the_server_down_cleanly(tmp_path: Path) -> None:
    """Ctrl-C ends it with exit code 0 (SIGTERM is covered by the time-factor test)."""
    with served(tmp_path, "--manual-clock") as running:
        with running.client() as http:
            assert http.get("/v1/status").status_code == 200
        code, took = running.stop(signal.SIGINT)
        assert code == 0
        assert took < 5.0
        out, err = running.output()
        assert b"Traceback" not in err
        assert running.keys["admin_token"].encode() in out
