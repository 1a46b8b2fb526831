"""``harness.testing`` against ``avatar-sim serve --time-factor 0.05`` by URL (HAR-7).

With the admin token, ``wait_for`` counts the served simulator's seconds (20 of them pass in one
wall second) and ``session_events`` reads its event log; a ``WebhookReceiver`` gives the same
events as webhooks; with the URL alone the events come from the resource, without reasons.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from harness.testing import (
    HttpAdmin,
    StateNotReached,
    WebhookReceiver,
    session_events,
    target_of,
    wait_for,
)
from harness.testing.target import url_client
from tests.serve.support import Served, served

pytestmark = pytest.mark.req("HAR-7")

BODY: dict[str, Any] = {
    "avatar_id": "av_stock_mock",
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "by-url"},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("by_url"), "--time-factor", "0.05") as running:
        yield running


@pytest.fixture
def admin(server: Served) -> Iterator[HttpAdmin]:
    with HttpAdmin(server.base_url, server.keys["admin_token"]) as admin:
        yield admin
        admin.restore()


def test_waiting_counts_the_served_simulators_seconds(admin: HttpAdmin) -> None:
    org = admin.create_organization("waits", "enterprise")
    with admin.client(org["keys"]["unrestricted"]) as client:
        assert target_of(client).seconds == "simulated seconds"
        admin.set_capacity(0)
        created = client.post("/v1/sessions", json=BODY).json()
        started = time.monotonic()
        with pytest.raises(StateNotReached, match=r"still queued after 4 s \(simulated seconds\)"):
            wait_for(client, created["id"], "running", within=4)
        # 15 simulated seconds to the start-up timeout: under a wall second at this factor.
        failed = wait_for(client, created["id"], "failed", within=60)
        assert time.monotonic() - started < 5
        assert failed["error"]["code"] == "no_capacity"
        history = session_events(client, created["id"])
        assert (history.source, history.reason) == ("event_log", "no_capacity")


def test_events_come_from_webhooks_or_from_the_resource(server: Served, admin: HttpAdmin) -> None:
    org = admin.create_organization("hooks", "enterprise")
    key = org["keys"]["unrestricted"]
    with WebhookReceiver() as hooks, admin.client(key) as client:
        hooks.register(admin, org["id"])
        created = client.post("/v1/sessions", json={**BODY, "idle_timeout_seconds": 2}).json()
        wait_for(client, created["id"], "ended", within=60)
        hooks.wait_until(lambda h: len(h.events_about(created["id"])) == 5, within=60)
        heard = session_events(client, created["id"], webhooks=hooks)
        logged = session_events(client, created["id"])
    assert heard.source == "webhooks" and logged.source == "event_log"
    assert heard.types == logged.types and heard.reason == logged.reason == "idle_timeout"
    assert [e.at for e in heard] == [e.at for e in logged]
    # With the URL alone (a deployment to the helpers): the resource, without reasons.
    with url_client(server.base_url, key) as plain:
        told = session_events(plain, created["id"])
    assert (told.source, told.has_reasons) == ("resource", False)
    assert told.types == [
        "session.queued",
        "session.starting",
        "session.first_frame",
        "session.ended",
    ]
    assert told.final is not None and told.final.reason is None


def test_waiting_moves_a_manual_served_clock(tmp_path_factory: pytest.TempPathFactory) -> None:
    with (
        served(tmp_path_factory.mktemp("manual"), "--manual-clock") as server,
        HttpAdmin(server.base_url, server.keys["admin_token"]) as admin,
    ):
        org = admin.create_organization("manual", "enterprise")
        with admin.client(org["keys"]["unrestricted"]) as client:
            start = admin.now()
            created = client.post("/v1/sessions", json={**BODY, "idle_timeout_seconds": 3})
            ended = wait_for(client, created.json()["id"], "ended", within=60)
            assert ended["first_frame_at"] is not None
            assert 3 <= admin.now() - start <= 60
