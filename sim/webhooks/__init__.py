"""Webhooks: per-organization endpoints, signed at-least-once deliveries (EV-3, GAP-EV-2).

``WebhookDispatcher`` is the entry point; ``Sender`` is the seam to the network (a recorder
in-process, an HTTP client in served mode).
"""

from __future__ import annotations

from sim.webhooks.deliveries import (
    DELIVERY_TRANSITIONS,
    FINAL_DELIVERY_STATUSES,
    Attempt,
    AttemptOutcome,
    Delivery,
    DeliveryStatus,
    DeliveryTrigger,
    is_success,
    next_delivery_status,
)
from sim.webhooks.dispatcher import WebhookDispatcher
from sim.webhooks.endpoints import SECRET_PREFIX, Endpoint
from sim.webhooks.sender import (
    PENDING,
    Pending,
    RecordingSender,
    Sender,
    SendResult,
    WebhookRequest,
)
from sim.webhooks.signing import render_body, signed_headers

__all__ = [
    "DELIVERY_TRANSITIONS",
    "FINAL_DELIVERY_STATUSES",
    "PENDING",
    "SECRET_PREFIX",
    "Attempt",
    "AttemptOutcome",
    "Delivery",
    "DeliveryStatus",
    "DeliveryTrigger",
    "Endpoint",
    "Pending",
    "RecordingSender",
    "SendResult",
    "Sender",
    "WebhookDispatcher",
    "WebhookRequest",
    "is_success",
    "next_delivery_status",
    "render_body",
    "signed_headers",
]
