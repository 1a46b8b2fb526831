"""Payloads and Standard Webhooks signatures (EV-3, GAP-EV-2).

The body is the event's payload (``Event.to_payload``) as compact JSON. Each attempt is signed
anew at its own simulated time with the ``standardwebhooks`` reference implementation, so any
Standard Webhooks verifier accepts it: ``webhook-id`` is the event id (the same on every retry and
every endpoint, which is what receivers deduplicate on), ``webhook-timestamp`` the Unix time the
attempt is signed at (simulated, unless the dispatcher is given another signing clock),
``webhook-signature`` ``v1,<base64 HMAC-SHA256>``.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

from sim.events import Event

__all__ = ["render_body", "signed_headers"]


def render_body(event: Event) -> str:
    return json.dumps(event.to_payload(), separators=(",", ":"))


def signed_headers(secret: str, message_id: str, at: datetime, body: str) -> dict[str, str]:
    """The headers of one attempt made at ``at`` (an aware UTC datetime)."""
    timestamp = math.floor(at.timestamp())
    signature = Webhook(secret).sign(message_id, datetime.fromtimestamp(timestamp, UTC), body)
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": str(signature),
    }
