"""In process, webhooks are delivered for real through the dispatcher's sender seam (HAR-20,
HAR-21, HAR-28).

The toolkit's in-process simulator posts each attempt to the registered URL, signed, from inside
the clock step due for it: what a delivery reports is what the receiver answered, a URL where
nothing listens is retried on the virtual clock's schedule and reported failed, and waiting for
webhooks counts simulated seconds.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import httpx
import pytest

from harness.testing import (
    InProcessAdmin,
    NoWebhooks,
    WebhookReceiver,
    create_session,
    session_events,
    wait_for,
    wait_for_delivery,
)
from harness.testing.delivery import HttpSender
from sim.platform import Platform
from sim.webhooks import WebhookRequest

BODY: dict[str, Any] = {
    "avatar_id": "av_stock_mock",
    "idle_timeout_seconds": 2,
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "hooks"},
}


def _world() -> tuple[Platform, InProcessAdmin, dict[str, Any], httpx.Client]:
    platform = Platform.create()
    admin = InProcessAdmin(platform)
    org = admin.create_organization()
    return platform, admin, org, admin.client(org["keys"]["unrestricted"])


@pytest.mark.req("HAR-20")
def test_a_delivery_reports_what_the_receiver_really_answered() -> None:
    _, admin, org, client = _world()
    with client, WebhookReceiver(fail=lambda webhook_id, attempt: attempt == 1) as hooks:
        hooks.register(admin, org["id"], ["session.queued"])
        create_session(client, BODY)
        delivered = wait_for_delivery(admin, org["id"], "succeeded", within=60)
    assert [a["status"] for a in delivered["attempts"]] == [500, 204]
    assert [a.answered for a in hooks.attempts] == [500, 204]
    assert all(a.verified for a in hooks.attempts)  # signed at the wall clock: it verifies
    first, retry = (admin.seconds_at(a["scheduled_at"]) for a in delivered["attempts"])
    assert retry - first == admin.platform.config.webhooks.retry_delays_seconds[0]


@pytest.mark.req("HAR-20")
def test_a_dead_url_is_retried_on_the_virtual_clock_then_failed() -> None:
    platform, admin, org, client = _world()
    admin.register_webhook(org["id"], "http://127.0.0.1:9/nobody", ["session.queued"])
    started = time.monotonic()
    with client:
        create_session(client, BODY)
        dead = wait_for_delivery(admin, org["id"], "failed")
    delays = platform.config.webhooks.retry_delays_seconds
    assert [a["outcome"] for a in dead["attempts"]] == ["no_response"] * (len(delays) + 1)
    times = [admin.seconds_at(a["scheduled_at"]) for a in dead["attempts"]]
    assert [round(b - a, 3) for a, b in itertools.pairwise(times)] == list(delays)
    assert platform.clock.now >= sum(delays)
    assert time.monotonic() - started < 30  # hours of retries, simulated


@pytest.mark.req("HAR-21")
def test_an_empty_webhook_history_raises_naming_what_was_expected() -> None:
    platform, _, _, client = _world()
    with client, WebhookReceiver() as unregistered:
        created = create_session(client, BODY).json()
        wait_for(client, created["id"], "ended", within=60)
        before = platform.clock.now
        with pytest.raises(NoWebhooks, match=r"expected session\.ended and session\.usage") as told:
            session_events(client, created["id"], webhooks=unregistered, within=5)
    assert "holds no event" in str(told.value) and "(simulated seconds)" in str(told.value)
    assert platform.clock.now == pytest.approx(before + 5)  # it waited the target's seconds


@pytest.mark.req("HAR-28")
def test_the_receiver_waits_in_the_targets_seconds() -> None:
    platform, admin, org, client = _world()
    with client, WebhookReceiver() as hooks:
        hooks.register(admin, org["id"])
        created = create_session(client, BODY).json()
        hooks.wait_until(lambda h: len(h.events_about(created["id"])) >= 5, within=120)
        assert platform.clock.now < 120  # it ran the clock to the deliveries, no further
        with pytest.raises(AssertionError, match=r"waited 30 s \(simulated seconds\)"):
            hooks.wait_until(lambda h: len(h.events) > 100, within=30)
    with WebhookReceiver() as loose, pytest.raises(TypeError, match="register"):
        loose.wait_until(lambda h: True, within=1)


@pytest.mark.req("HAR-20")
def test_the_sender_answers_the_status_or_none() -> None:
    request = WebhookRequest("dlv_1", 1, "http://hooks.test/h", {"a": "b"}, "{}", 1.0)
    assert HttpSender(httpx.MockTransport(lambda r: httpx.Response(410))).send(request) == 410

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    assert HttpSender(httpx.MockTransport(refuse)).send(request) is None
