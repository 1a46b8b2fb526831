"""In-process webhooks delivered for real: the in-process side of ``sim.webhooks``' sender seam.

Why: a test that registers a webhook endpoint wants to know what its receiver got. The domain's
dispatcher decides what to send, signs it and schedules the retries on the virtual clock; its
default sender only records, which in process made every delivery look answered ``200`` while no
request was made. Here the attempt is a real HTTP POST to the registered URL, made synchronously
inside the clock step that is due for it (so its timing is simulated: the retry schedule runs on
the virtual clock, and waiting for it takes no wall time), and its real answer, or ``None`` when
nothing answers, is what the delivery records. Served mode does the same through an async client
(``harness.serve.webhook_sender``); a dead URL is reported ``failed`` in both.

Each attempt is signed at its wall-clock moment, as served mode does: a receiver checks
``webhook-timestamp`` against its own clock, and the virtual clock is far from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from sim.webhooks import WebhookRequest

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = ["HttpSender", "deliver_for_real"]


class HttpSender:
    """A ``sim.webhooks.Sender`` that POSTs each attempt and answers its status (``None``: no
    answer within the attempt's timeout, or no connection)."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._transport = transport  # for tests: an ``httpx.MockTransport``

    def send(self, request: WebhookRequest) -> int | None:
        # A client per attempt: nothing stays open between two clock steps.
        from harness.serve.webhook_sender import post_arguments

        with httpx.Client(transport=self._transport, follow_redirects=False) as client:
            try:
                response = client.post(request.url, **post_arguments(request))
            except httpx.HTTPError:
                return None
        return response.status_code


def deliver_for_real(platform: Platform) -> None:
    """Make ``platform``'s webhook deliveries real HTTP requests, signed at the wall clock's
    moment (once per platform; a sender already set by someone else is kept)."""
    from sim.webhooks import RecordingSender

    dispatcher = platform.webhooks
    if not isinstance(dispatcher.sender, RecordingSender):
        return
    from harness.serve.clock_driver import wall_now

    dispatcher.sender = HttpSender()
    dispatcher.use_signing_clock(wall_now)
