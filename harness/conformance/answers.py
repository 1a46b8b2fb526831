"""Reading a target's answer: success, the refusal's type, code and param, and the body a
script needs.

Why one home: every script asks these of the exchanges it gets, and the judging itself is the
model's.
"""

from __future__ import annotations

from typing import Any

from harness.conformance.checks import CheckFailed, envelope_of
from harness.conformance.target import Exchange

__all__ = [
    "expect_status",
    "is_success",
    "refusal_code",
    "refusal_param",
    "refusal_type",
    "session_of",
]


def is_success(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


def refusal_type(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("type")
    return value if isinstance(value, str) else None


def refusal_code(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("code")
    return value if isinstance(value, str) else None


def refusal_param(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("param")
    return value if isinstance(value, str) else None


def expect_status(exchange: Exchange, *statuses: int, what: str) -> Any:
    """The JSON body when the status is one of ``statuses`` (2xx when none), else a failure."""
    ok = exchange.status in statuses if statuses else is_success(exchange)
    if not ok:
        wanted = "/".join(map(str, statuses)) or "2xx"
        raise CheckFailed(
            f"{what}: expected {wanted}, got {exchange.status}: {exchange.body[:300]!r}", exchange
        )
    return exchange.json()


def session_of(body: Any) -> dict[str, Any] | None:
    session = body.get("session", body) if isinstance(body, dict) else None
    return session if isinstance(session, dict) else None
