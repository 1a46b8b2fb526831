"""Served mode's webhook transport: real, signed POSTs with httpx (EV-3, GAP-EV-2).

Why it is shaped like this: the domain's dispatcher (``sim.webhooks``) decides what to send,
signs it and schedules retries with backoff on the simulated clock; it only needs a ``Sender``.
Sending must not block the event loop, and the dispatcher calls ``send`` from inside a clock step,
so ``send`` answers ``PENDING`` at once and queues the request. A worker task on the server's loop
posts it with ``httpx.AsyncClient`` and reports the outcome back with
``WebhookDispatcher.report_attempt`` (on the same loop, so no thread touches the platform), then
lets the clock process what is due now so the delivery record is complete without waiting for the
next request.

Timeouts are wall seconds (``WebhookRequest.timeout_seconds`` taken as-is): a real endpoint answers
in real time whatever the time factor. A connection error or timeout reports ``None`` (no
answer), which the dispatcher retries like any failure. Several deliveries may be in flight at
once (``max_in_flight``) so one slow receiver does not hold up the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

import httpx

from sim.webhooks import PENDING, Pending, WebhookDispatcher, WebhookRequest

__all__ = ["HttpWebhookSender", "post_arguments"]


def post_arguments(request: WebhookRequest) -> dict[str, Any]:
    """The body, headers and timeout of one attempt's POST, as both transports send it (served
    mode here, the test toolkit's in-process sender in ``harness.testing.delivery``)."""
    return {
        "content": request.body.encode("utf-8"),
        "headers": dict(request.headers),
        "timeout": request.timeout_seconds,
    }


class HttpWebhookSender:
    """A ``sim.webhooks.Sender`` that delivers over HTTP from an asyncio task.

    ``attach(platform.webhooks)`` plugs it into the platform's dispatcher; ``run`` is the worker (a
    background task of ``ServedApp``) and ``aclose`` closes the HTTP client at shutdown.
    ``transport`` is for tests (an ``httpx.MockTransport``); ``on_reported`` runs after each
    report (served mode: process what is now due on the clock).
    """

    def __init__(
        self,
        *,
        max_in_flight: int = 16,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._queue: deque[WebhookRequest] = deque()
        self._wake: asyncio.Event | None = None
        self._max_in_flight = max_in_flight
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._dispatcher: WebhookDispatcher | None = None
        self._on_reported: Callable[[], None] = lambda: None

    def attach(
        self, dispatcher: WebhookDispatcher, on_reported: Callable[[], None] | None = None
    ) -> None:
        """Become the dispatcher's sender; ``on_reported`` runs after every report."""
        self._dispatcher = dispatcher
        dispatcher.sender = self
        if on_reported is not None:
            self._on_reported = on_reported

    # -- the Sender protocol (called inside a clock step: never blocks) -------------------------

    def send(self, request: WebhookRequest) -> Pending:
        self._queue.append(request)
        if self._wake is not None:
            self._wake.set()
        return PENDING

    @property
    def queued(self) -> int:
        return len(self._queue)

    # -- the worker ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Post queued requests until cancelled; in-flight posts are cancelled with it."""
        self._wake = asyncio.Event()
        self._client = httpx.AsyncClient(transport=self._transport, follow_redirects=False)
        slots = asyncio.Semaphore(self._max_in_flight)
        in_flight: set[asyncio.Task[None]] = set()
        try:
            while True:
                while self._queue:
                    await slots.acquire()
                    task = asyncio.create_task(self._deliver(self._queue.popleft(), slots))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                self._wake.clear()
                if not self._queue:
                    await self._wake.wait()
        finally:
            for task in list(in_flight):
                task.cancel()
            for task in list(in_flight):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._wake = None

    async def _deliver(self, request: WebhookRequest, slots: asyncio.Semaphore) -> None:
        try:
            status = await self._post(request)
        finally:
            slots.release()
        if self._dispatcher is not None:
            self._dispatcher.report_attempt(request.delivery_id, request.attempt, status)
            self._on_reported()

    async def _post(self, request: WebhookRequest) -> int | None:
        assert self._client is not None
        try:
            response = await self._client.post(request.url, **post_arguments(request))
        except httpx.HTTPError:
            return None
        return response.status_code

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
