"""Sessions through their whole life over HTTP, time moved by the admin clock (SES-ST-*)."""

from __future__ import annotations

from typing import Any

import pytest
from httpx import Client

from sim.platform import Platform
from tests.asgi.support import ADMIN, Org, assert_envelope, session_body, upper_bound


def _advance(client: Client, seconds: float) -> dict[str, Any]:
    response = client.post("/_sim/clock/advance", json={"seconds": seconds}, headers=ADMIN)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _get(client: Client, org: Org, session_id: str) -> dict[str, Any]:
    body: dict[str, Any] = client.get(f"/v1/sessions/{session_id}", headers=org.auth()).json()
    return body


def _ended_reason(platform: Platform, session_id: str) -> str | None:
    ended = [
        e
        for e in platform.kernel.events.of_type("session.ended")
        if e.data["object"]["id"] == session_id
    ]
    return ended[-1].data["reason"] if ended else None


def _boot_budget(platform: Platform) -> float:
    """Seconds after which a placed session has surely shown its first frame."""
    scheduler = platform.config.scheduler
    return upper_bound(scheduler.worker_boot) + upper_bound(scheduler.first_frame_latency) + 1


@pytest.mark.req("SES-ST-1", "SES-ST-3", "SES-ST-5", "SES-ST-8", "EP-SESS-9", "CONV-2")
def test_a_session_runs_drains_and_ends_on_request(
    client: Client, platform: Platform, org: Org
) -> None:
    created = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert created.status_code == 201
    session = created.json()
    assert session["status"] == "queued"
    assert session["created_at"].endswith("Z")
    assert "worker_token" not in session["transport"]
    _advance(client, _boot_budget(platform))
    running = _get(client, org, session["id"])
    assert running["status"] == "running"
    assert running["started_at"] is not None and running["first_frame_at"] is not None
    speech = client.post(
        f"/_sim/sessions/{session['id']}/audio",
        json={"kind": "speech", "duration": 3.0},
        headers=ADMIN,
    )
    assert speech.status_code == 200 and speech.json()["id"] == session["id"]
    ending = client.post(f"/v1/sessions/{session['id']}/end", headers=org.auth()).json()
    assert ending["status"] == "ending"
    _advance(client, platform.config.sessions.drain_max_seconds + 1)
    ended = _get(client, org, session["id"])
    assert ended["status"] == "ended"
    assert ended["usage"]["billable_seconds"] >= 1
    assert _ended_reason(platform, session["id"]) == "client_request"
    again = client.post(f"/v1/sessions/{session['id']}/end", headers=org.auth())
    assert again.status_code == 200 and again.json() == ended
    _advance(client, 3600)
    assert _get(client, org, session["id"]) == ended


@pytest.mark.req("SES-ST-4", "SES-ST-8")
def test_ending_a_session_that_has_not_started_cancels_it(client: Client, org: Org) -> None:
    session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    canceled = client.post(f"/v1/sessions/{session['id']}/end", headers=org.auth()).json()
    assert canceled["status"] == "canceled"
    _advance(client, 60)
    assert _get(client, org, session["id"])["status"] == "canceled"


@pytest.mark.req("SES-ST-7")
def test_a_silent_session_ends_on_the_idle_timeout(
    client: Client, platform: Platform, org: Org
) -> None:
    body = session_body(idle_timeout_seconds=20)
    session = client.post("/v1/sessions", json=body, headers=org.auth()).json()
    _advance(client, _boot_budget(platform))
    assert _get(client, org, session["id"])["status"] == "running"
    _advance(client, 21)
    ended = _get(client, org, session["id"])
    assert ended["status"] == "ended"
    assert _ended_reason(platform, session["id"]) == "idle_timeout"


@pytest.mark.req("SES-ST-6", "SES-ST-7")
def test_audio_keeps_a_session_alive_until_its_max_duration(
    client: Client, platform: Platform, org: Org
) -> None:
    body = session_body(idle_timeout_seconds=25, max_duration_seconds=60)
    session = client.post("/v1/sessions", json=body, headers=org.auth()).json()
    assert session["max_duration_seconds"] == 60
    _advance(client, _boot_budget(platform))
    for _ in range(8):  # 72 s of back-to-back audio: the idle timer never fires
        client.post(
            f"/_sim/sessions/{session['id']}/audio",
            json={"kind": "silence", "duration": 9.0},
            headers=ADMIN,
        )
        _advance(client, 9.0)
    ended = _get(client, org, session["id"])
    assert ended["status"] == "ended"
    assert _ended_reason(platform, session["id"]) == "max_duration"
    assert ended["usage"]["billable_seconds"] == 60


@pytest.mark.req("SES-ST-2", "SES-ST-8")
def test_a_session_nobody_can_place_fails_with_no_capacity(
    client: Client, platform: Platform, org: Org
) -> None:
    capacity = client.post("/_sim/faults/capacity", json={"workers": 0}, headers=ADMIN)
    assert capacity.status_code == 200
    session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    assert session["status"] == "queued"
    _advance(client, platform.config.limits.startup_timeout_seconds + 0.001)
    failed = _get(client, org, session["id"])
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "no_capacity"
    client.post("/_sim/faults/capacity", json={"workers": 8}, headers=ADMIN)
    _advance(client, 600)
    assert _get(client, org, session["id"]) == failed
    end = client.post(f"/v1/sessions/{session['id']}/end", headers=org.auth())
    assert end.status_code == 200 and end.json() == failed


@pytest.mark.req("SES-ST-8", "SIM-8")
def test_a_worker_crash_fails_a_running_session(
    client: Client, platform: Platform, org: Org
) -> None:
    session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    _advance(client, _boot_budget(platform))
    crash = client.post(
        "/_sim/faults/worker_crash", json={"session_id": session["id"]}, headers=ADMIN
    )
    assert crash.status_code == 200, crash.text
    failed = _get(client, org, session["id"])
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "worker_lost"


@pytest.mark.req("SIM-8", "ERR-1")
def test_admin_endpoints_need_the_token_and_validate_bodies(
    client: Client, platform: Platform
) -> None:
    for headers, code in [
        ({}, "admin_token.missing"),
        ({"Authorization": "Bearer nope"}, "admin_token.invalid"),
    ]:
        assert_envelope(client.get("/_sim/clock", headers=headers), 401, "authentication", code)
    clock = client.get("/_sim/clock", headers=ADMIN).json()
    assert clock == {"now": "2026-01-01T00:00:00.000Z", "seconds": 0.0}
    backwards = client.post("/_sim/clock/advance", json={"seconds": -1}, headers=ADMIN)
    assert_envelope(backwards, 422, "unprocessable", "validation.range", "seconds")
    typo = client.post("/_sim/clock/advance", json={"secs": 1}, headers=ADMIN)
    assert typo.status_code == 422
    moved = _advance(client, 90.5)
    assert moved == {"now": "2026-01-01T00:01:30.500Z", "seconds": 90.5}
    assert_envelope(client.get("/_sim/nothing", headers=ADMIN), 404, "not_found", "route.not_found")
    wrong = client.get("/_sim/clock/advance", headers=ADMIN)
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method.not_allowed"
    org = client.post(
        "/_sim/organizations", json={"name": "New", "plan": "pro"}, headers=ADMIN
    ).json()
    assert set(org["keys"]) == {"unrestricted", "runs_read", "runs_write", "revoked"}
    models = client.get(
        "/v1/models", headers={"Authorization": f"Bearer {org['keys']['unrestricted']}"}
    )
    assert models.status_code == 200
    bad_plan = client.post("/_sim/organizations", json={"name": "X", "plan": "gold"}, headers=ADMIN)
    assert_envelope(bad_plan, 422, "unprocessable", "validation.enum", "plan")
    unknown = client.post(
        "/_sim/faults/worker_crash",
        json={"session_id": "sess_01JAAAAAAAAAAAAAAAAAAAAAAA"},
        headers=ADMIN,
    )
    assert unknown.status_code == 404
    hook = client.post(
        "/_sim/webhooks", json={"org_id": org["id"], "url": "https://hooks.test/x"}, headers=ADMIN
    )
    assert hook.status_code == 201, hook.text
    deliveries = client.get(f"/_sim/webhooks/deliveries?org_id={org['id']}", headers=ADMIN)
    assert deliveries.status_code == 200 and deliveries.json()["object"] == "list"
    purge = client.post("/_sim/faults/purge_failure", json={"enabled": True}, headers=ADMIN)
    assert purge.json() == {"purge_failure": True}


@pytest.mark.req("SIM-8")
def test_without_an_admin_token_the_admin_api_does_not_exist(platform: Platform) -> None:
    from harness.target import SyncASGITransport
    from sim.asgi import create_app

    app = create_app(platform)
    with Client(transport=SyncASGITransport(app), base_url="http://testserver") as bare:
        response = bare.get("/_sim/clock", headers=ADMIN)
    assert_envelope(response, 404, "not_found", "route.not_found")
