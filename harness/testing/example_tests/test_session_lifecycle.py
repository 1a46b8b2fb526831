"""Session lifecycle tests that run unchanged in process and by URL (``avatar-sim examples``).

Copied by ``avatar-sim examples DIR`` (or ``--tests-only``) into ``DIR/tests/``. Run them on the
in-process simulator, on served simulators the plugin starts (one per xdist worker), or against
a served simulator or deployment of your own (without the admin token, the tests that need the
simulator's controls are skipped, saying so)::

    pytest DIR/tests
    pytest DIR/tests --avatar-sim-serve -n 2
    pytest DIR/tests --avatar-sim-base-url URL --avatar-sim-api-key KEY --avatar-sim-admin-token T

Durations are the target's seconds: simulated in process and on a served simulator, wall seconds
on a deployment. Every helper used here is the toolkit's (``harness.testing``); the sessions a
test creates through ``api_client`` or ``fresh_org.client`` are ended after it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx

from harness.testing import (
    SessionHistory,
    SimAdmin,
    WebhookReceiver,
    create_session,
    expect_error,
    wait_for,
    wait_for_delivery,
)
from harness.testing import session_events as events_of
from harness.testing.fixtures import Organization

#: How long a new session may take to start (a worker boots, then the first frame comes).
STARTUP = 30
#: Where nothing listens: a webhook endpoint there is never answered.
NOBODY = "http://127.0.0.1:9/webhooks"


def session_body(**fields: Any) -> dict[str, Any]:
    """A valid create body on the stock mock avatar, with ``fields`` added."""
    transport = {"type": "livekit", "url": "wss://rtc.example", "room_name": "examples"}
    return {"avatar_id": "av_stock_mock", "transport": transport, **fields}


def create(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    """A new session (``create_session`` waits out a rate limit); the test fails otherwise."""
    response = create_session(client, session_body(**fields))
    assert response.is_success, response.text  # the seed names no success code
    return dict(response.json())


def test_idle_timeout_ends_a_running_session(
    api_client: httpx.Client, session_events: Callable[[str], SessionHistory]
) -> None:
    created = create(api_client, idle_timeout_seconds=5)
    assert created["status"] == "queued"
    ended = wait_for(api_client, created["id"], "ended", within=STARTUP + 5 + 10)
    assert ended["first_frame_at"] is not None  # it ran before it ended
    history = session_events(created["id"]).require_reasons()
    history.assert_path(["queued", "starting", "running", "ended"])
    assert history.reason == "idle_timeout", history


def test_audio_keeps_a_session_from_idling(
    api_client: httpx.Client,
    sim_admin: SimAdmin,
    play_audio: Callable[..., dict[str, Any]],
    session_events: Callable[[str], SessionHistory],
) -> None:
    created = create(api_client, idle_timeout_seconds=10)
    wait_for(api_client, created["id"], "running", within=STARTUP)
    play_audio(created["id"], "speech", seconds=6)
    wait_for(api_client, created["id"], "ended", within=6 + 10 + 10)
    history = session_events(created["id"])
    assert history.reason == "idle_timeout", history
    # The idle timer counts from the end of the speech, not from the first frame.
    listening, final = history.first("session.first_frame"), history.final
    assert final is not None and listening.at is not None and final.at is not None
    assert sim_admin.seconds_at(final.at) - sim_admin.seconds_at(listening.at) >= 6 + 10


def test_end_while_queued_cancels(api_client: httpx.Client, sim_admin: SimAdmin) -> None:
    sim_admin.set_capacity(0)  # no worker can take it: it stays queued (restored afterwards)
    created = create(api_client)
    assert api_client.get(f"/v1/sessions/{created['id']}").json()["status"] == "queued"
    ended = api_client.post(f"/v1/sessions/{created['id']}/end")
    assert (ended.status_code, ended.json()["status"]) == (200, "canceled")
    again = api_client.post(f"/v1/sessions/{created['id']}/end")  # terminal: unchanged
    assert (again.status_code, again.json()) == (200, ended.json())


def test_end_while_running_drains_then_ends(
    api_client: httpx.Client, session_events: Callable[[str], SessionHistory]
) -> None:
    created = create(api_client, idle_timeout_seconds=600)
    wait_for(api_client, created["id"], "running", within=STARTUP)
    ending = api_client.post(f"/v1/sessions/{created['id']}/end")
    assert (ending.status_code, ending.json()["status"]) == (200, "ending")
    wait_for(api_client, created["id"], "ended", within=30)
    history = session_events(created["id"]).require_reasons()
    history.assert_path(["queued", "starting", "running", "ending", "ended"])
    assert history.reason == "client_request"


def test_max_duration_is_clamped_to_the_plan(api_client: httpx.Client, sim_admin: SimAdmin) -> None:
    plans = api_client.get("/v1/billing/plans").json()["data"]
    shortest = min(plans, key=lambda plan: plan["max_session_duration_seconds"])
    limit = shortest["max_session_duration_seconds"]
    assert limit < 3600, "some plan allows less than the 3600 s ceiling"
    org = sim_admin.create_organization("clamped", plan=shortest["key"])
    with sim_admin.client(org["keys"]["unrestricted"]) as client:
        created = create(client, max_duration_seconds=3600)
        assert created["max_duration_seconds"] == limit
        client.post(f"/v1/sessions/{created['id']}/end")
        wait_for(client, created["id"], ("ended", "failed", "canceled"), within=60)


def test_max_duration_ends_a_running_session(
    api_client: httpx.Client, session_events: Callable[[str], SessionHistory]
) -> None:
    created = create(api_client, idle_timeout_seconds=600, max_duration_seconds=5)
    assert created["max_duration_seconds"] == 5
    ended = wait_for(api_client, created["id"], "ended", within=STARTUP + 5 + 10)
    assert ended["first_frame_at"] is not None
    assert session_events(created["id"]).require_reasons().reason == "max_duration"


def test_no_capacity_after_the_startup_timeout(
    api_client: httpx.Client,
    sim_admin: SimAdmin,
    session_events: Callable[[str], SessionHistory],
) -> None:
    sim_admin.set_capacity(0)
    created = create(api_client)
    failed = wait_for(api_client, created["id"], "failed", within=15 + 10)
    assert failed["error"]["code"] == "no_capacity"
    history = session_events(created["id"]).require_reasons()
    history.assert_path(["queued", "failed"])
    assert history.reason == "no_capacity", history


def test_a_full_queue_answers_503_with_retry_after(
    api_client: httpx.Client, sim_admin: SimAdmin
) -> None:
    sim_admin.at_capacity()  # no worker, no room to wait (restored afterwards)
    refused = create_session(api_client, session_body())
    expect_error(refused, "service_unavailable", "at_capacity", status=503)
    assert float(refused.headers["Retry-After"]) >= 1


def test_a_second_session_on_one_key_is_refused(api_client: httpx.Client) -> None:
    create(api_client, idle_timeout_seconds=600)
    second = create_session(api_client, session_body())
    expect_error(second, "quota_exceeded", "concurrent_sessions", status=429)


def test_an_idempotent_create_is_replayed_not_repeated(api_client: httpx.Client) -> None:
    key = f"examples-{uuid.uuid4()}"
    body = session_body(idle_timeout_seconds=600)
    first = create_session(api_client, body, idempotency_key=key)
    assert first.is_success, first.text
    replay = create_session(api_client, body, idempotency_key=key)
    assert (replay.status_code, replay.json()) == (first.status_code, first.json())
    changed = create_session(
        api_client, session_body(idle_timeout_seconds=599), idempotency_key=key
    )
    expect_error(changed, "conflict", status=409)


def test_webhooks_follow_a_session_signed_and_retried(
    fresh_org: Organization, sim_admin: SimAdmin
) -> None:
    # The receiver refuses each event's first attempt: the retry (5 s later) is accepted.
    with WebhookReceiver(fail=lambda webhook_id, attempt: attempt == 1) as hooks:
        hooks.register(sim_admin, fresh_org.id)
        created = create(fresh_org.client, idle_timeout_seconds=3)
        wait_for(fresh_org.client, created["id"], "ended", within=STARTUP + 3 + 10)
        heard = events_of(fresh_org.client, created["id"], webhooks=hooks)
        hooks.wait_until(lambda h: len(h.events_about(created["id"])) == 5, within=60)
    assert heard.source == "webhooks" and heard.reason == "idle_timeout", heard
    assert all(attempt.verified for attempt in hooks.attempts)
    assert {attempt.answered for attempt in hooks.attempts} == {500, 204}


def test_a_dead_webhook_url_is_reported_failed(
    fresh_org: Organization, sim_admin: SimAdmin
) -> None:
    sim_admin.register_webhook(fresh_org.id, NOBODY, ["session.queued"])
    create(fresh_org.client)
    dead = wait_for_delivery(sim_admin, fresh_org.id, "failed", event_type="session.queued")
    assert dead["last_status"] is None  # nothing ever answered
    assert {attempt["outcome"] for attempt in dead["attempts"]} == {"no_response"}
