"""A lifecycle suite written from the README and docs/testing-reference.md alone (HAR-29).

Not collected here (no ``test_`` prefix): ``tests/harness/test_docs_suite.py`` copies it into a
project of its own and runs it unchanged in process and by URL. It uses nothing but the plugin's
fixtures and the names of ``harness.testing`` the reference page lists; no helper is copied from
the example suite.
"""

import uuid

from hypothesis.stateful import invariant, rule

from harness.testing import (
    SessionMachine,
    WebhookReceiver,
    create_session,
    expect_error,
    pass_time,
    retry_after,
    session_events,
    wait_for,
    wait_for_delivery,
    wait_for_run,
)

BODY = {
    "avatar_id": "av_stock_mock",
    "idle_timeout_seconds": 600,
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "docs"},
}


def new(client, **fields):
    created = create_session(client, {**BODY, **fields})
    assert created.status_code == 201, created.text
    return created.json()


def test_cancel_while_starting(api_client, sim_admin, session_events):
    sim_admin.slow_startup(60)
    session = new(api_client)
    wait_for(api_client, session["id"], "starting", within=30)
    ended = api_client.post(f"/v1/sessions/{session['id']}/end").json()
    assert ended["status"] == "canceled"
    session_events(session["id"]).assert_path(["queued", "starting", "canceled"])


def test_barge_in_while_talking(api_client, sim_admin, play_audio, session_events):
    session = new(api_client)
    wait_for(api_client, session["id"], "running", within=30)
    play_audio(session["id"], "speech", seconds=10)
    pass_time(api_client, 2)
    sim_admin.barge_in(session["id"])
    barge = session_events(session["id"]).first("session.barge_in")
    assert barge.data["rpc"] == "lk.clear_buffer" and "dropped_seconds" in barge.data


def test_max_duration_while_talking(api_client, play_audio, session_events):
    session = new(api_client, max_duration_seconds=5)
    wait_for(api_client, session["id"], "running", within=30)
    play_audio(session["id"], "speech", seconds=60)
    wait_for(api_client, session["id"], "ended", within=20)
    assert session_events(session["id"]).reason == "max_duration"


def test_a_worker_crash_fails_the_session(api_client, sim_admin, session_events):
    session = new(api_client)
    wait_for(api_client, session["id"], "running", within=30)
    sim_admin.crash_worker(session["id"])
    failed = wait_for(api_client, session["id"], "failed", within=5)
    assert failed["error"]["code"] == "worker_lost"
    session_events(session["id"]).assert_path(["queued", "starting", "running", "failed"])


def test_heartbeat_loss_past_the_limit(api_client, sim_admin, session_events):
    session = new(api_client)
    wait_for(api_client, session["id"], "running", within=30)
    sim_admin.lose_heartbeats(session["id"], 45)
    wait_for(api_client, session["id"], "failed", within=60)
    assert session_events(session["id"]).reason == "worker_lost"


def test_a_run_succeeds(api_client):
    run = api_client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "hello"}})
    assert run.is_success, run.text
    assert wait_for_run(api_client, run.json()["id"], "succeeded", within=600)["status"]


def test_a_run_is_canceled(api_client):
    run = api_client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "hello"}}).json()
    canceled = api_client.post(f"/v1/runs/{run['id']}/cancel")
    assert canceled.is_success, canceled.text
    wait_for_run(api_client, run["id"], "canceled", within=60)


def test_webhooks_followed_and_retried(fresh_org, sim_admin):
    with WebhookReceiver(fail=lambda webhook_id, attempt: attempt == 1) as hooks:
        hooks.register(sim_admin, fresh_org.id)
        session = new(fresh_org.client, idle_timeout_seconds=2)
        wait_for(fresh_org.client, session["id"], "ended", within=40)
        history = session_events(fresh_org.client, session["id"], webhooks=hooks)
    assert history.source == "webhooks" and history.reason == "idle_timeout"
    assert "session.failed" not in history.types
    assert all(attempt.verified for attempt in hooks.attempts)
    assert 500 in {attempt.answered for attempt in hooks.attempts}


def test_a_dead_webhook_url_fails(fresh_org, sim_admin):
    sim_admin.register_webhook(fresh_org.id, "http://127.0.0.1:9/hooks", ["session.queued"])
    new(fresh_org.client)
    dead = wait_for_delivery(sim_admin, fresh_org.id, "failed")
    assert dead["attempts"] and dead["attempts"][-1]["outcome"] == "no_response"


def test_the_organization_cap_across_keys(sim_admin):
    org = sim_admin.create_organization("capped", "free", concurrency_override=2)
    keys = [org["keys"]["unrestricted"]] + [sim_admin.create_key(org["id"])["key"] for _ in "ab"]
    clients = [sim_admin.client(key) for key in keys]
    try:
        for client in clients[:2]:
            new(client)
        refused = create_session(clients[2], BODY)
        expect_error(refused, "quota_exceeded", "concurrent_sessions", status=429)
    finally:
        for client in clients:
            client.close()


def test_the_create_rate_limit(api_client):
    for _ in range(40):
        response = create_session(api_client, BODY, patience=0)
        if response.status_code == 429 and response.json()["error"]["type"] == "rate_limit":
            break
        assert response.status_code == 201, response.text
        api_client.post(f"/v1/sessions/{response.json()['id']}/end")
    else:
        raise AssertionError("no rate limit in 40 creates")
    wait = retry_after(response)
    assert wait >= 1
    pass_time(api_client, wait)
    assert create_session(api_client, BODY).status_code == 201


def test_at_capacity(api_client, sim_admin):
    sim_admin.at_capacity()
    refused = create_session(api_client, BODY)
    expect_error(refused, "service_unavailable", "at_capacity", status=503)
    assert retry_after(refused) >= 1


def test_idempotency_across_the_window(api_client):
    key = f"docs-{uuid.uuid4()}"
    first = create_session(api_client, BODY, idempotency_key=key).json()
    assert create_session(api_client, BODY, idempotency_key=key).json()["id"] == first["id"]
    api_client.post(f"/v1/sessions/{first['id']}/end")
    wait_for(api_client, first["id"], ("ended", "canceled"), within=60)
    pass_time(api_client, 24 * 3600 + 60)
    again = create_session(api_client, BODY, idempotency_key=key)
    assert again.status_code == 201 and again.json()["id"] != first["id"]


def test_a_bounded_machine_with_a_rule_of_ours(api_client):
    class Ours(SessionMachine.for_client(api_client)):
        @rule()
        def read_usage(self):
            assert self.target.api.usage(self.target.accounts[0].keys[0]).ok

        @invariant()
        def sessions_start_queued(self):
            assert all(t.statuses[0] == "queued" for t in self.sessions.values())

    Ours.run(max_examples=3, steps=8)
