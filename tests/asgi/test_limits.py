"""Rate limits, idempotent replays and pagination shapes over HTTP (LIM-3 … LIM-7, CONV-4 … 7)."""

from __future__ import annotations

import math

import pytest
from httpx import Client

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.config import SimConfig
from sim.platform import Platform
from tests.asgi.support import ADMIN, Org, assert_envelope, make_org, session_body


def _create_and_end(client: Client, org: Org) -> dict[str, str]:
    response = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert response.status_code == 201, response.text
    end = client.post(f"/v1/sessions/{response.json()['id']}/end", headers=org.auth())
    assert end.json()["status"] == "canceled"
    return dict(response.headers)


@pytest.mark.req("LIM-3", "LIM-4", "EP-SESS-5")
def test_the_eleventh_create_in_a_minute_is_refused_with_the_headers(
    client: Client, platform: Platform, org: Org
) -> None:
    reset = str(math.ceil(platform.clock.unix_seconds(60.0)))
    for index in range(10):
        headers = _create_and_end(client, org)
        assert headers["x-ratelimit-limit"] == "10"
        assert headers["x-ratelimit-remaining"] == str(9 - index)
        assert headers["x-ratelimit-reset"] == reset
        assert "retry-after" not in headers
        platform.clock.advance(1.0)
    refused = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert_envelope(refused, 429, "rate_limit", "rate_limited")
    assert refused.headers["retry-after"] == "50"  # the first slot frees at t=60, now is t=10
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert refused.headers["x-ratelimit-reset"] == reset
    # The refusal did not count, and once the window slides a create is admitted again.
    client.post("/_sim/clock/advance", json={"seconds": 50}, headers=ADMIN)
    again = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert again.status_code == 201
    assert again.headers["x-ratelimit-remaining"] == "0"


@pytest.mark.req("LIM-3", "LIM-4")
def test_the_limit_is_per_key(client: Client, platform: Platform, org: Org) -> None:
    for _ in range(10):
        _create_and_end(client, org)
    other_key = platform.admin.create_key(org.id)["key"]
    response = client.post(
        "/v1/sessions", json=session_body(), headers={"Authorization": f"Bearer {other_key}"}
    )
    assert response.status_code == 201
    assert response.headers["x-ratelimit-remaining"] == "9"


@pytest.mark.req("LIM-4", "EP-SESS-4", "LIM-1")
def test_a_concurrency_refusal_carries_rate_headers_and_retry_after(
    client: Client, org: Org
) -> None:
    assert client.post("/v1/sessions", json=session_body(), headers=org.auth()).status_code == 201
    refused = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert_envelope(refused, 429, "quota_exceeded", "concurrent_sessions")
    assert refused.headers["x-ratelimit-remaining"] == "8"
    assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.req("EP-SESS-6", "ERR-2")
def test_no_free_worker_answers_503_at_capacity_with_retry_after(
    client: Client, platform: Platform
) -> None:
    platform.admin.set_capacity(0)
    orgs = [platform.admin.create_organization(f"Org {i}", "enterprise")["id"] for i in range(2)]
    limit = platform.config.scheduler.max_queue_length
    statuses = []
    for index in range(limit + 1):
        key = platform.admin.create_key(orgs[index % len(orgs)])["key"]  # one session per key
        response = client.post(
            "/v1/sessions", json=session_body(), headers={"Authorization": f"Bearer {key}"}
        )
        statuses.append(response.status_code)
    assert statuses[:limit] == [201] * limit
    assert_envelope(response, 503, "service_unavailable", "at_capacity")
    assert int(response.headers["retry-after"]) >= 1


@pytest.mark.req("LIM-5", "CONV-7", "EP-SESS-1")
def test_an_idempotent_retry_replays_the_stored_response(
    client: Client, platform: Platform, org: Org
) -> None:
    headers = {**org.auth(), "Idempotency-Key": "order-42"}
    first = client.post("/v1/sessions", json=session_body(), headers=headers)
    platform.clock.advance(3600.0)
    second = client.post("/v1/sessions", json=session_body(), headers=headers)
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert second.headers["x-request-id"] != first.headers["x-request-id"]
    assert len(platform.sessions.sessions()) == 1

    conflict = client.post("/v1/sessions", json=session_body(quality="pro"), headers=headers)
    assert_envelope(conflict, 409, "conflict", "idempotency_key.reused", "Idempotency-Key")

    run_headers = {**org.auth(), "Idempotency-Key": "order-42"}  # keys are scoped per operation
    run = client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "x"}}, headers=run_headers)
    replay = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "x"}}, headers=run_headers
    )
    assert run.status_code in (201, 409)
    if run.status_code == 201:
        assert replay.json() == run.json()
        assert replay.headers["idempotent-replayed"] == "true"


@pytest.mark.req("LIM-5")
def test_after_the_window_the_key_is_free_again(
    client: Client, platform: Platform, org: Org
) -> None:
    headers = {**org.auth(), "Idempotency-Key": "window"}
    first = client.post("/v1/sessions", json=session_body(), headers=headers).json()
    client.post(f"/v1/sessions/{first['id']}/end", headers=org.auth())
    platform.clock.advance(platform.config.limits.idempotency_window_seconds)
    second = client.post("/v1/sessions", json=session_body(quality="pro"), headers=headers)
    assert second.status_code == 201
    assert second.json()["id"] != first["id"]
    assert "idempotent-replayed" not in second.headers


@pytest.mark.req("LIM-6")
@pytest.mark.parametrize("key", ["", "k" * 256])
def test_idempotency_keys_outside_1_to_255_characters_are_refused(
    client: Client, platform: Platform, org: Org, key: str
) -> None:
    headers = {**org.auth(), "Idempotency-Key": key}
    response = client.post("/v1/sessions", json=session_body(), headers=headers)
    assert_envelope(response, 422, "unprocessable", "idempotency_key.invalid", "Idempotency-Key")
    assert platform.sessions.sessions() == []
    ok = client.post(
        "/v1/sessions", json=session_body(), headers={**headers, "Idempotency-Key": "k" * 255}
    )
    assert ok.status_code == 201


@pytest.mark.req("CONV-4", "CONV-5", "CONV-6", "EP-SESS-7")
def test_session_pages_walk_every_item_once(client: Client, platform: Platform, org: Org) -> None:
    empty = client.get("/v1/sessions", headers=org.auth()).json()
    assert empty == {"object": "list", "data": [], "has_more": False}
    created = []
    for _ in range(5):
        created.append(client.post("/v1/sessions", json=session_body(), headers=org.auth()).json())
        client.post(f"/v1/sessions/{created[-1]['id']}/end", headers=org.auth())
        platform.clock.advance(61.0)
    seen: list[str] = []
    cursor = None
    while True:
        query = "limit=2" + (f"&starting_after={cursor}" if cursor else "")
        page = client.get(f"/v1/sessions?{query}", headers=org.auth()).json()
        assert set(page) == {"object", "data", "has_more", "next_cursor"}
        assert isinstance(page["next_cursor"], str)
        assert page["next_cursor"] == page["data"][-1]["id"]
        seen += [s["id"] for s in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert seen == [s["id"] for s in reversed(created)]  # newest first, once each
    filtered = client.get("/v1/sessions?status=queued", headers=org.auth()).json()
    assert filtered == {"object": "list", "data": [], "has_more": False}


@pytest.mark.req("CONV-5", "EP-AV-2", "LIM-7")
def test_avatar_pages_use_av_cursors_and_default_to_20(client: Client, org: Org) -> None:
    page = client.get("/v1/avatars?limit=2", headers=org.auth()).json()
    assert page["has_more"] is True
    assert page["next_cursor"].startswith("av_")
    rest = client.get(
        f"/v1/avatars?starting_after={page['next_cursor']}", headers=org.auth()
    ).json()
    assert rest["data"] and rest["has_more"] is False
    assert len(client.get("/v1/avatars", headers=org.auth()).json()["data"]) <= 20
    nothing = client.get("/v1/avatars?scope=org", headers=org.auth()).json()
    assert nothing == {"object": "list", "data": [], "has_more": False}


@pytest.mark.req("CONV-5", "EP-RUN-2")
def test_run_event_cursors_are_integers(client: Client, platform: Platform, org: Org) -> None:
    run = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "hello"}}, headers=org.auth()
    ).json()
    platform.clock.advance(120.0)
    first = client.get(f"/v1/runs/{run['id']}/events?limit=2", headers=org.auth()).json()
    assert first["has_more"] is True
    assert isinstance(first["next_cursor"], int) and not isinstance(first["next_cursor"], bool)
    assert [e["sequence"] for e in first["data"]] == [1, 2]
    rest = client.get(
        f"/v1/runs/{run['id']}/events?starting_after={first['next_cursor']}", headers=org.auth()
    ).json()
    assert rest["data"][0]["sequence"] == 3
    assert isinstance(rest["next_cursor"], int)
    after = rest["next_cursor"]
    tail = client.get(
        f"/v1/runs/{run['id']}/events?starting_after={after}", headers=org.auth()
    ).json()
    assert tail == {"object": "list", "data": [], "has_more": False}


@pytest.mark.req("LIM-5", "LIM-3", "LIM-4", "EP-SESS-5")
def test_an_idempotent_replay_beats_the_rate_limit_and_counts_for_nothing(
    client: Client, platform: Platform, org: Org
) -> None:
    """A client retrying after a timeout gets its session back, not 429 (GAP-LIM-2)."""
    retry = {**org.auth(), "Idempotency-Key": "retry-after-timeout"}
    original = client.post("/v1/sessions", json=session_body(), headers=retry)
    client.post(f"/v1/sessions/{original.json()['id']}/end", headers=org.auth())
    for _ in range(8):
        _create_and_end(client, org)  # 9 of the 10 creates of the window are spent

    def replay() -> None:
        again = client.post("/v1/sessions", json=session_body(), headers=retry)
        assert again.status_code == 201, again.text
        assert again.json() == original.json()
        assert again.headers["idempotent-replayed"] == "true"
        assert again.headers["x-ratelimit-limit"] == "10"

    for _ in range(3):  # replays are not new requests: the last slot stays free
        replay()
    new = _create_and_end(client, org)
    assert new["x-ratelimit-remaining"] == "0"
    replay()  # the window is spent, and the replay is still answered
    refused = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert_envelope(refused, 429, "rate_limit", "rate_limited")
    assert len(platform.sessions.sessions()) == 10


@pytest.mark.req("LIM-5", "LIM-3", "SIM-7")
def test_replays_skip_the_limiter_through_the_python_api_too(platform: Platform, org: Org) -> None:
    caller = platform.authenticate(f"Bearer {org.keys['unrestricted']}")
    params = {"body": session_body(), "idempotency_key": "py-retry"}
    first = platform.call("createSession", caller, params)
    assert first.rate is not None and first.rate.remaining == 9
    for _ in range(12):
        again = platform.call("createSession", caller, dict(params))
        assert again.replayed and again.body == first.body
        assert again.rate is not None and again.rate.remaining == 9


@pytest.mark.req("LIM-9", "LIM-4", "SIM-6")
def test_reads_are_limited_only_when_configured(client: Client, org: Org) -> None:
    """``limits.rate.reads_per_window`` (GAP-LIM-1: off by default) limits every authenticated
    read of a key in one bucket, with the headers of any limited operation."""
    for _ in range(30):
        assert client.get("/v1/sessions", headers=org.auth()).status_code == 200
    assert "x-ratelimit-limit" not in client.get("/v1/billing/quota", headers=org.auth()).headers
    config = SimConfig().model_dump()
    config["limits"]["rate"]["reads_per_window"] = 2
    platform = Platform.create(SimConfig.model_validate(config))
    limited = make_org(platform, "Acme", "pro")
    other_key = platform.admin.create_key(limited.id)["key"]
    with Client(
        transport=SyncASGITransport(create_app(platform)), base_url="http://testserver"
    ) as http:
        first = http.get("/v1/sessions", headers=limited.auth())
        assert first.status_code == 200 and first.headers["x-ratelimit-remaining"] == "1"
        assert http.get("/v1/billing/quota", headers=limited.auth()).status_code == 200
        refused = http.get("/v1/runs", headers=limited.auth())
        assert_envelope(refused, 429, "rate_limit", "rate_limited")
        assert refused.headers["retry-after"] == "60"
        other = http.get("/v1/sessions", headers={"Authorization": f"Bearer {other_key}"})
        assert other.status_code == 200  # per key
        assert http.get("/v1/status").status_code == 200  # public reads are never limited
        platform.advance(60)
        assert http.get("/v1/sessions", headers=limited.auth()).status_code == 200
