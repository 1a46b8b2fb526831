"""The seam between deliveries and the network: the ``Sender`` protocol.

The domain never speaks HTTP. A sender receives one signed ``WebhookRequest`` and answers either
at once (the status code, or ``None`` for a timeout or connection error) or ``PENDING``, meaning
"the outcome will be reported later" through ``WebhookDispatcher.report_attempt``. That second
form lets served mode hand requests to an async HTTP client on a queue without the domain
knowing: the delivery process simply waits, in simulated time, for the report. A sender that
answers ``PENDING`` must always report exactly once, applying ``timeout_seconds`` itself.

``RecordingSender`` is the default: it accepts everything and keeps what it was sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, Protocol

__all__ = ["PENDING", "Pending", "RecordingSender", "SendResult", "Sender", "WebhookRequest"]

Pending = Literal["pending"]
PENDING: Final[Pending] = "pending"
SendResult = int | None | Pending


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """One POST to make: ``body`` is sent as-is (UTF-8) with ``headers``."""

    delivery_id: str
    attempt: int
    url: str
    headers: Mapping[str, str]
    body: str
    timeout_seconds: float


class Sender(Protocol):
    def send(self, request: WebhookRequest) -> SendResult:
        """Make the request: a status, ``None`` (no answer) or ``PENDING`` (report later)."""


class RecordingSender:
    """Answers every request with ``status`` (200) and records it, in order."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[WebhookRequest] = []

    def send(self, request: WebhookRequest) -> int:
        self.requests.append(request)
        return self.status
