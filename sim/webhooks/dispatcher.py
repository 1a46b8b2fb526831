"""The webhook dispatcher: endpoints per organization, and deliveries of every matching event.

It subscribes to the event log for each organization that registers an endpoint (events of other
organizations never reach it), creates one ``Delivery`` per (event, endpoint of the event's
organization that wants the type), in registration order, and runs one SimPy process per
delivery. The process makes attempt 1 at the event's time, then waits ``retry_delays_seconds``
after each failed attempt; a 2xx ends it ``succeeded``, the last failure ``failed``. Cost per
delivery is one process and one timeout per retry, whatever happens elsewhere; nothing is left
scheduled once a delivery ends. Every attempt is recorded (``attempts``).

Signing and sending use the simulated clock by default, so the same seed gives the same requests.
The signature's timestamp alone may come from elsewhere (``use_signing_clock``): a receiver checks
``webhook-timestamp`` against its own clock, so served mode, whose simulated time runs at another
speed than the receiver's, signs with the moment the attempt is really made. The payload keeps
simulated times either way.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import simpy

from sim.errors import NotFound
from sim.events import Event
from sim.kernel import Kernel
from sim.webhooks.deliveries import (
    Attempt,
    AttemptOutcome,
    Delivery,
    DeliveryTrigger,
    is_success,
    next_delivery_status,
)
from sim.webhooks.endpoints import Endpoint, new_secret, validate_event_types, validate_url
from sim.webhooks.sender import PENDING, RecordingSender, Sender, WebhookRequest
from sim.webhooks.signing import render_body, signed_headers

__all__ = ["SigningClock", "WebhookDispatcher"]

#: Gives the aware UTC moment an attempt is signed at (its ``webhook-timestamp``).
SigningClock = Callable[[], datetime]


class WebhookDispatcher:
    def __init__(self, kernel: Kernel, sender: Sender | None = None) -> None:
        self._kernel = kernel
        self._config = kernel.config.webhooks
        self._secrets = kernel.streams.stream("webhook_secrets")
        self.sender: Sender = sender if sender is not None else RecordingSender()
        self._signing_clock: SigningClock = kernel.clock.now_datetime
        self._endpoints: dict[str, Endpoint] = {}
        self._deliveries: dict[str, Delivery] = {}
        self._attempts: list[Attempt] = []
        self._attempt_index: dict[tuple[str, int], int] = {}
        self._awaiting: dict[tuple[str, int], simpy.Event] = {}
        self._listening: set[str] = set()  # organizations whose events the dispatcher receives

    # -- endpoints -----------------------------------------------------------------------------

    def register_endpoint(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> Endpoint:
        """A new endpoint of ``org_id``; it receives events emitted from now on."""
        endpoint = Endpoint(
            id=self._kernel.ids.new("webhook_endpoint"),
            org_id=org_id,
            url=validate_url(url),
            event_types=validate_event_types(event_types),
            secret=new_secret(self._secrets),
            created_at=self._kernel.clock.now,
        )
        self._endpoints[endpoint.id] = endpoint
        if org_id not in self._listening:
            self._listening.add(org_id)
            self._kernel.events.subscribe(self._on_event, org_id=org_id)
        return endpoint

    def remove_endpoint(self, org_id: str, endpoint_id: str) -> Endpoint:
        """Stop sending to an endpoint: pending retries to it are canceled."""
        endpoint = self.endpoint(org_id, endpoint_id)
        del self._endpoints[endpoint_id]
        return endpoint

    def endpoint(self, org_id: str, endpoint_id: str) -> Endpoint:
        endpoint = self._endpoints.get(endpoint_id)
        if endpoint is None or endpoint.org_id != org_id:
            raise NotFound("webhook_endpoint.not_found", f"No webhook endpoint {endpoint_id}.")
        return endpoint

    def endpoints(self, org_id: str | None = None) -> builtins.list[Endpoint]:
        return [e for e in self._endpoints.values() if org_id is None or e.org_id == org_id]

    def use_signing_clock(self, now: SigningClock) -> None:
        """Sign every later attempt at ``now()`` (an aware UTC datetime) instead of the simulated
        time: the injected clock served mode passes so receivers can check their tolerance at any
        time factor. The attempt records the same ``webhook_timestamp`` it signs."""
        self._signing_clock = now

    # -- records -------------------------------------------------------------------------------

    def deliveries(self, org_id: str | None = None) -> builtins.list[Delivery]:
        return [d for d in self._deliveries.values() if org_id is None or d.org_id == org_id]

    def delivery(self, delivery_id: str) -> Delivery:
        try:
            return self._deliveries[delivery_id]
        except KeyError:
            raise NotFound("webhook_delivery.not_found", f"No delivery {delivery_id}.") from None

    def attempts(self, delivery_id: str | None = None) -> builtins.list[Attempt]:
        """Every attempt in the order they were made (optionally of one delivery)."""
        return [a for a in self._attempts if delivery_id is None or a.delivery_id == delivery_id]

    # -- the asynchronous seam -----------------------------------------------------------------

    def report_attempt(self, delivery_id: str, attempt: int, status: int | None) -> None:
        """The outcome of an attempt whose sender answered ``PENDING``.

        The delivery process resumes at the current simulated time (the next clock step).
        """
        waiting = self._awaiting.pop((delivery_id, attempt), None)
        if waiting is None:
            raise ValueError(f"attempt {attempt} of {delivery_id} is not awaiting an outcome")
        waiting.succeed(status)

    # -- internals -----------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        body: str | None = None
        now = self._kernel.clock.now
        for endpoint in builtins.list(self._endpoints.values()):
            if endpoint.org_id != event.org_id or not endpoint.wants(event.type):
                continue
            body = body if body is not None else render_body(event)
            delivery = Delivery(
                id=self._kernel.ids.new("delivery"),
                event_id=event.id,
                event_type=event.type,
                org_id=event.org_id,
                endpoint_id=endpoint.id,
                url=endpoint.url,
                body=body,
                created_at=now,
                status=next_delivery_status(None, "matched"),
                next_attempt_at=now,
            )
            self._deliveries[delivery.id] = delivery
            self._kernel.clock.env.process(self._deliver(delivery.id))

    def _move(self, delivery_id: str, trigger: DeliveryTrigger, **changes: Any) -> Delivery:
        current = self._deliveries[delivery_id]
        moved = replace(current, status=next_delivery_status(current.status, trigger), **changes)
        self._deliveries[delivery_id] = moved
        return moved

    def _deliver(self, delivery_id: str) -> Generator[simpy.Event, Any, None]:
        env = self._kernel.clock.env
        delays = self._config.retry_delays_seconds
        for number in range(1, len(delays) + 2):
            if number > 1:
                yield env.timeout(delays[number - 2])
            endpoint = self._endpoints.get(self._deliveries[delivery_id].endpoint_id)
            if endpoint is None:
                self._move(
                    delivery_id, "endpoint_removed", next_attempt_at=None, completed_at=env.now
                )
                return
            self._move(delivery_id, "attempt_started", attempts=number, next_attempt_at=None)
            status = yield from self._attempt(endpoint, delivery_id, number)
            now = float(env.now)
            if is_success(status):
                self._move(delivery_id, "succeeded", last_status=status, completed_at=now)
                return
            if number > len(delays):
                self._move(delivery_id, "retries_exhausted", last_status=status, completed_at=now)
                return
            self._move(
                delivery_id, "retry", last_status=status, next_attempt_at=now + delays[number - 1]
            )

    def _attempt(
        self, endpoint: Endpoint, delivery_id: str, number: int
    ) -> Generator[simpy.Event, Any, int | None]:
        clock = self._kernel.clock
        delivery = self._deliveries[delivery_id]
        signed_at = self._signing_clock()
        headers = signed_headers(endpoint.secret, delivery.event_id, signed_at, delivery.body)
        record = Attempt(
            delivery_id=delivery_id,
            event_id=delivery.event_id,
            endpoint_id=endpoint.id,
            attempt=number,
            scheduled_at=clock.now,
            webhook_timestamp=math.floor(signed_at.timestamp()),
        )
        self._attempt_index[(delivery_id, number)] = len(self._attempts)
        self._attempts.append(record)
        request = WebhookRequest(
            delivery_id=delivery_id,
            attempt=number,
            url=endpoint.url,
            headers=headers,
            body=delivery.body,
            timeout_seconds=self._config.attempt_timeout_seconds,
        )
        answer = self.sender.send(request)
        if answer == PENDING:
            waiting = clock.env.event()
            self._awaiting[(delivery_id, number)] = waiting
            answer = yield waiting
        status = answer if isinstance(answer, int) and not isinstance(answer, bool) else None
        outcome: AttemptOutcome
        if is_success(status):
            outcome = "succeeded"
        elif status is None:
            outcome = "no_response"
        else:
            outcome = "http_error"
        index = self._attempt_index.pop((delivery_id, number))
        self._attempts[index] = replace(
            record, outcome=outcome, status=status, completed_at=clock.now
        )
        return status
