"""Flat, immutable records the runner's clients write while a scenario runs.

Why the client keeps its own log instead of reading the platform's API log: only the client
knows which attempt a request was, whether it was a retry, what it waited and why. The platform's
log stays the service's view; this one is the customer's.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CallRecord", "ClientRecord"]


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One request a scenario client made, and how the service answered it."""

    at: float  # simulated seconds
    client: int  # the arrival that made it
    operation: str  # contract operationId, or ``createSession`` for every session surface
    surface: str | None  # billing surface of a session create
    organization: str
    org_id: str
    key: int  # index of the organization's key used
    attempt: int  # 1 for the first try
    outcome: str  # "ok", "replayed" or the error code
    error_type: str | None
    retry_after: float | None
    delay: float | None  # what the client waited before its next attempt (None: it gave up)
    idempotency_key: str | None
    resource_id: str | None  # the session or run created


@dataclass(frozen=True, slots=True)
class ClientRecord:
    """One arrival: what it wanted and how far it got."""

    client: int
    at: float
    kind: str  # "session" or "run"
    organization: str
    surface: str | None
    quality: str | None
    model: str | None
    planned_length: float | None  # seconds the client meant to keep the session running
    attempts: int
    resource_id: str | None  # None when every attempt was refused
    final_outcome: str
