"""Session lifecycle tests that run unchanged in process and against a URL (avatar-sim examples).

Copied by ``avatar-sim examples DIR`` into ``DIR/tests/``. Run them on the in-process simulator::

    pytest DIR/tests

or against ``avatar-sim serve`` (or, without the admin token, a deployment: the tests that need
the simulator's controls are then skipped, saying so)::

    pytest DIR/tests --avatar-sim-base-url URL --avatar-sim-api-key KEY --avatar-sim-admin-token T

Durations are the target's seconds: simulated in process and on a served simulator (whose clock
the admin token lets the helpers read), wall seconds on a deployment.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest

from harness.testing import SessionHistory, SimAdmin, pass_time, wait_for

#: A session's terminal statuses: it never leaves them.
TERMINAL = ("ended", "failed", "canceled")
#: How long a new session may take to start (a worker boots, then the first frame comes).
STARTUP = 30


def session_body(**fields: Any) -> dict[str, Any]:
    """A valid create body on the stock mock avatar, with ``fields`` added."""
    transport = {"type": "livekit", "url": "wss://rtc.example", "room_name": "examples"}
    return {"avatar_id": "av_stock_mock", "transport": transport, **fields}


def seconds_between(earlier: str | None, later: str | None) -> float:
    """Seconds from one ISO-8601 timestamp to another."""
    assert earlier is not None and later is not None, "the event times are unknown"
    start = datetime.fromisoformat(earlier.replace("Z", "+00:00"))
    return (datetime.fromisoformat(later.replace("Z", "+00:00")) - start).total_seconds()


def create(client: httpx.Client, body: dict[str, Any], **headers: str) -> httpx.Response:
    """``POST /v1/sessions``, waiting out a rate limit as a polite client does."""
    while True:
        response = client.post("/v1/sessions", json=body, headers=headers)
        if response.status_code != 429 or response.json()["error"]["type"] != "rate_limit":
            return response
        pass_time(client, float(response.headers["Retry-After"]))


class Sessions:
    """The sessions a test makes through ``create``; ``end_all`` ends each one and waits until
    it is over, because on a shared server the caps count what a test leaves behind."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.made: list[str] = []

    def create(self, **fields: Any) -> dict[str, Any]:
        response = create(self.client, session_body(**fields))
        assert response.is_success, response.text  # the seed names no success code
        return self.keep(response.json())

    def keep(self, session: dict[str, Any]) -> dict[str, Any]:
        self.made.append(session["id"])
        return session

    def end_all(self) -> None:
        for session_id in self.made:
            self.client.post(f"/v1/sessions/{session_id}/end")
            wait_for(self.client, session_id, TERMINAL, within=60)


@pytest.fixture
def sessions(api_client: httpx.Client) -> Iterator[Sessions]:
    made = Sessions(api_client)
    yield made
    made.end_all()


def test_idle_timeout_ends_a_running_session(
    api_client: httpx.Client,
    sessions: Sessions,
    session_events: Callable[[str], SessionHistory],
) -> None:
    created = sessions.create(idle_timeout_seconds=5)
    assert created["status"] == "queued"
    ended = wait_for(api_client, created["id"], "ended", within=STARTUP + 5 + 10)
    assert ended["first_frame_at"] is not None  # it ran before it ended
    history = session_events(created["id"]).require_reasons()
    assert [e.status for e in history if e.type != "session.usage"] == [
        "queued", "starting", "running", "ended"
    ]  # fmt: skip
    assert history.final is not None and history.final.reason == "idle_timeout", history
    listening = history.first("session.first_frame")
    assert seconds_between(listening.at, history.final.at) >= 5, history


def test_audio_keeps_a_session_from_idling(
    api_client: httpx.Client,
    sessions: Sessions,
    play_audio: Callable[..., dict[str, Any]],
    session_events: Callable[[str], SessionHistory],
) -> None:
    created = sessions.create(idle_timeout_seconds=10)
    wait_for(api_client, created["id"], "running", within=STARTUP)
    play_audio(created["id"], "speech", seconds=6)
    wait_for(api_client, created["id"], "ended", within=6 + 10 + 10)
    history = session_events(created["id"])
    assert history.reason == "idle_timeout", history
    # The idle timer counts from the end of the speech, not from the first frame.
    listening = history.first("session.first_frame")
    assert history.final is not None
    assert seconds_between(listening.at, history.final.at) >= 6 + 10, history


def test_end_while_queued_cancels(
    api_client: httpx.Client, sessions: Sessions, sim_admin: SimAdmin
) -> None:
    sim_admin.set_capacity(0)  # no worker can take it: it stays queued (restored afterwards)
    created = sessions.create()
    assert api_client.get(f"/v1/sessions/{created['id']}").json()["status"] == "queued"
    ended = api_client.post(f"/v1/sessions/{created['id']}/end")
    assert (ended.status_code, ended.json()["status"]) == (200, "canceled")
    again = api_client.post(f"/v1/sessions/{created['id']}/end")  # terminal: unchanged
    assert (again.status_code, again.json()) == (200, ended.json())


def test_end_while_running_drains_then_ends(
    api_client: httpx.Client,
    sessions: Sessions,
    session_events: Callable[[str], SessionHistory],
) -> None:
    created = sessions.create(idle_timeout_seconds=600)
    wait_for(api_client, created["id"], "running", within=STARTUP)
    ending = api_client.post(f"/v1/sessions/{created['id']}/end")
    assert (ending.status_code, ending.json()["status"]) == (200, "ending")
    wait_for(api_client, created["id"], "ended", within=30)
    history = session_events(created["id"]).require_reasons()
    assert history.types.index("session.ending") < history.types.index("session.ended")


def test_max_duration_is_clamped_to_the_plan(api_client: httpx.Client, sim_admin: SimAdmin) -> None:
    plans = api_client.get("/v1/billing/plans").json()["data"]
    shortest = min(plans, key=lambda plan: plan["max_session_duration_seconds"])
    limit = shortest["max_session_duration_seconds"]
    assert limit < 3600, "some plan allows less than the 3600 s ceiling"
    org = sim_admin.create_organization("clamped", plan=shortest["key"])
    with sim_admin.client(org["keys"]["unrestricted"]) as client:
        created = create(client, session_body(max_duration_seconds=3600))
        assert created.is_success, created.text
        assert created.json()["max_duration_seconds"] == limit
        client.post(f"/v1/sessions/{created.json()['id']}/end")
        wait_for(client, created.json()["id"], TERMINAL, within=60)


def test_max_duration_ends_a_running_session(
    api_client: httpx.Client,
    sessions: Sessions,
    session_events: Callable[[str], SessionHistory],
) -> None:
    created = sessions.create(idle_timeout_seconds=600, max_duration_seconds=5)
    assert created["max_duration_seconds"] == 5
    ended = wait_for(api_client, created["id"], "ended", within=STARTUP + 5 + 10)
    assert ended["first_frame_at"] is not None
    history = session_events(created["id"]).require_reasons()
    assert history.reason == "max_duration", history
    listening = history.first("session.first_frame")
    assert history.final is not None
    assert seconds_between(listening.at, history.final.at) >= 5, history


def test_no_capacity_after_the_startup_timeout(
    api_client: httpx.Client,
    sessions: Sessions,
    sim_admin: SimAdmin,
    session_events: Callable[[str], SessionHistory],
) -> None:
    sim_admin.set_capacity(0)
    created = sessions.create()
    failed = wait_for(api_client, created["id"], "failed", within=15 + 10)
    assert failed["error"]["code"] == "no_capacity"
    history = session_events(created["id"]).require_reasons()
    assert history.final is not None and history.reason == "no_capacity", history
    assert seconds_between(history.first("session.queued").at, history.final.at) >= 15


def test_a_second_session_on_one_key_is_refused(
    api_client: httpx.Client, sessions: Sessions
) -> None:
    sessions.create(idle_timeout_seconds=600)
    second = create(api_client, session_body())
    assert second.status_code == 429, second.text
    error = second.json()["error"]
    assert (error["type"], error["code"]) == ("quota_exceeded", "concurrent_sessions")


def test_an_idempotent_create_is_replayed_not_repeated(
    api_client: httpx.Client, sessions: Sessions
) -> None:
    key = f"examples-{uuid.uuid4()}"
    body = session_body(idle_timeout_seconds=600)
    first = create(api_client, body, **{"Idempotency-Key": key})
    assert first.is_success, first.text
    sessions.keep(first.json())
    replay = create(api_client, body, **{"Idempotency-Key": key})
    assert (replay.status_code, replay.json()) == (first.status_code, first.json())
    changed = create(api_client, session_body(idle_timeout_seconds=599), **{"Idempotency-Key": key})
    assert changed.status_code == 409, changed.text
    assert changed.json()["error"]["type"] == "conflict"
