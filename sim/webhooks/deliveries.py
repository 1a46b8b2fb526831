"""Delivery and attempt records, and the delivery lifecycle as data (EV-3, GAP-EV-2).

A *delivery* is one event on its way to one endpoint; an *attempt* is one HTTP request of it.
Deliveries are at-least-once: an attempt that gets no 2xx answer is retried on the configured
schedule, so a receiver that processed a request but answered late sees it again (same
``webhook-id``) and must deduplicate. Both records are immutable; a change makes a new record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from sim.clock import Clock
from sim.transitions import row_of

__all__ = [
    "DELIVERY_TRANSITIONS",
    "FINAL_DELIVERY_STATUSES",
    "Attempt",
    "AttemptOutcome",
    "Delivery",
    "DeliveryStatus",
    "DeliveryTrigger",
    "is_success",
    "next_delivery_status",
]

DeliveryStatus = Literal["scheduled", "attempting", "succeeded", "failed", "canceled"]
DeliveryTrigger = Literal[
    "matched", "attempt_started", "succeeded", "retry", "retries_exhausted", "endpoint_removed"
]
AttemptOutcome = Literal["pending", "succeeded", "http_error", "no_response"]

#: (current status or ``None`` before the delivery exists, trigger) -> next status.
DELIVERY_TRANSITIONS: Mapping[tuple[DeliveryStatus | None, DeliveryTrigger], DeliveryStatus] = (
    MappingProxyType(
        {
            (None, "matched"): "scheduled",
            ("scheduled", "attempt_started"): "attempting",
            ("attempting", "succeeded"): "succeeded",
            ("attempting", "retry"): "scheduled",
            ("attempting", "retries_exhausted"): "failed",
            ("scheduled", "endpoint_removed"): "canceled",
        }
    )
)

FINAL_DELIVERY_STATUSES: frozenset[DeliveryStatus] = frozenset({"succeeded", "failed", "canceled"})


def next_delivery_status(
    current: DeliveryStatus | None, trigger: DeliveryTrigger
) -> DeliveryStatus:
    """The status ``trigger`` leads to from ``current``; a missing row is a bug."""
    return row_of(DELIVERY_TRANSITIONS, current, trigger, "webhook delivery")


def is_success(status: int | None) -> bool:
    """A 2xx answer is a success; anything else (or no answer at all) is retried."""
    return status is not None and 200 <= status < 300


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    event_id: str
    event_type: str
    org_id: str
    endpoint_id: str
    url: str
    body: str  # the exact bytes (as text) every attempt sends and signs
    created_at: float
    status: DeliveryStatus
    attempts: int = 0
    next_attempt_at: float | None = None
    completed_at: float | None = None
    last_status: int | None = None

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "webhook_delivery",
            "event_id": self.event_id,
            "event_type": self.event_type,
            "endpoint_id": self.endpoint_id,
            "url": self.url,
            "status": self.status,
            "attempts": self.attempts,
            "last_status": self.last_status,
            "created_at": clock.timestamp(self.created_at),
            "next_attempt_at": clock.timestamp_or_none(self.next_attempt_at),
            "completed_at": clock.timestamp_or_none(self.completed_at),
        }


@dataclass(frozen=True, slots=True)
class Attempt:
    delivery_id: str
    event_id: str
    endpoint_id: str
    attempt: int  # 1 for the first request, then one more per retry
    scheduled_at: float  # simulated seconds at which the request was made
    webhook_timestamp: int  # the signed ``webhook-timestamp`` (Unix seconds)
    outcome: AttemptOutcome = "pending"
    status: int | None = None  # the HTTP status answered; None for no answer
    completed_at: float | None = None

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "object": "webhook_attempt",
            "delivery_id": self.delivery_id,
            "event_id": self.event_id,
            "endpoint_id": self.endpoint_id,
            "attempt": self.attempt,
            "scheduled_at": clock.timestamp(self.scheduled_at),
            "completed_at": clock.timestamp_or_none(self.completed_at),
            "status": self.status,
            "outcome": self.outcome,
        }
