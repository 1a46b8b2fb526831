"""Served mode's webhook sender: real signed POSTs reported back to the dispatcher (EV-3, SIM-8)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from harness.serve.webhook_sender import HttpWebhookSender
from sim.config import SimConfig
from sim.platform import Platform

URL = "http://receiver.test/hooks"


def _platform() -> tuple[Platform, str, str]:
    # Served mode starts the simulated clock at the wall-clock time, which is what lets a
    # receiver verify the signature with the library's default timestamp tolerance.
    config = SimConfig(epoch=datetime.now(UTC).replace(microsecond=0))
    platform = Platform.create(config)
    org = platform.accounts.create_organization("Hooks", "free")
    endpoint = platform.webhooks.register_endpoint(org.id, URL)
    return platform, org.id, endpoint.secret


def _drive(
    platform: Platform,
    sender: HttpWebhookSender,
    until: Callable[[], bool],
    between: Callable[[], None] = lambda: None,
) -> None:
    """Run the sender's worker until ``until()`` holds (at most 5 s of wall time)."""

    async def scenario() -> None:
        worker = asyncio.create_task(sender.run())
        started = time.monotonic()
        try:
            while not until():
                if time.monotonic() - started > 5.0:
                    raise AssertionError("the sender did not finish within 5 s")
                between()
                await asyncio.sleep(0.01)
        finally:
            worker.cancel()
            with pytest.raises(asyncio.CancelledError):
                await worker
            await sender.aclose()

    asyncio.run(scenario())


@pytest.mark.req("EV-3", "SIM-8")
def test_a_delivery_is_posted_signed_and_its_success_recorded() -> None:
    platform, org_id, secret = _platform()
    received: list[httpx.Request] = []

    async def receiver(request: httpx.Request) -> httpx.Response:
        received.append(request)
        return httpx.Response(204)

    sender = HttpWebhookSender(transport=httpx.MockTransport(receiver))
    sender.attach(platform.webhooks, on_reported=lambda: platform.clock.advance(0))
    platform.kernel.events.emit("session.queued", org_id, {"object": {"id": "sess_x"}})
    platform.clock.advance(0)
    assert sender.queued == 1

    _drive(platform, sender, lambda: platform.webhooks.deliveries()[0].status == "succeeded")

    assert len(received) == 1
    request = received[0]
    assert str(request.url) == URL
    assert request.method == "POST"
    payload = Webhook(secret).verify(request.content, dict(request.headers))
    assert payload["type"] == "session.queued"
    [attempt] = platform.webhooks.attempts()
    assert (attempt.outcome, attempt.status) == ("succeeded", 204)


@pytest.mark.req("EV-3", "SIM-8")
def test_failures_are_reported_and_retried_on_the_simulated_schedule() -> None:
    platform, org_id, _ = _platform()
    answers = [500]

    async def receiver(request: httpx.Request) -> httpx.Response:
        if not answers:
            raise httpx.ConnectError("receiver down", request=request)
        return httpx.Response(answers.pop(0))

    sender = HttpWebhookSender(transport=httpx.MockTransport(receiver))
    sender.attach(platform.webhooks, on_reported=lambda: platform.clock.advance(0))
    platform.kernel.events.emit("session.queued", org_id, {"object": {"id": "sess_y"}})
    platform.clock.advance(0)
    first_retry = platform.config.webhooks.retry_delays_seconds[0]

    def advance_when_idle() -> None:
        # Move simulated time to the retry once the first outcome is in.
        attempts = platform.webhooks.attempts()
        if len(attempts) == 1 and attempts[0].outcome != "pending":
            platform.clock.advance(first_retry)

    _drive(
        platform,
        sender,
        lambda: [a.outcome for a in platform.webhooks.attempts()] == ["http_error", "no_response"],
        between=advance_when_idle,
    )
    first, second = platform.webhooks.attempts()
    assert first.status == 500
    assert second.status is None
    assert second.scheduled_at - first.scheduled_at == pytest.approx(first_retry)
    delivery = platform.webhooks.deliveries()[0]
    assert delivery.status == "scheduled"  # the third attempt waits for its retry delay
    assert delivery.attempts == 2
