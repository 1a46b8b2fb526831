"""Domain errors to HTTP: the one status map and the one error envelope (ERR-1 … ERR-4).

The domain raises ``DomainError`` subclasses that know their ``type`` and ``code`` but no status.
This module is the only place that turns a type into a status and an error into the envelope
``{"error": {type, code, message, param, request_id}}``: nothing more goes in it, so a client that
validates the envelope strictly never breaks. Headers that travel with refusals (``Retry-After``,
``X-RateLimit-*``) are rendered here too, so a 429 or 503 carries them whichever code path
raised it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import Response

from sim.errors import DomainError, ErrorType, RateSnapshot

__all__ = [
    "STATUS_BY_TYPE",
    "error_response",
    "json_response",
    "rate_headers",
    "status_of",
]

#: The category → status map of ERR-2, plus GAP-ERR-2's 402 for ``insufficient_credits``.
STATUS_BY_TYPE: Mapping[ErrorType, int] = {
    "invalid_request": 400,
    "authentication": 401,
    "permission": 403,
    "not_found": 404,
    "conflict": 409,
    "unprocessable": 422,
    "rate_limit": 429,
    "quota_exceeded": 429,
    "internal": 500,
    "service_unavailable": 503,
}

_PAYMENT_REQUIRED_CODES = frozenset({"insufficient_credits"})
_JSON = "application/json"


def status_of(error: DomainError) -> int:
    """The HTTP status of ``error``: by type, except credits that ran out answer 402."""
    if error.type == "quota_exceeded" and error.code in _PAYMENT_REQUIRED_CODES:
        return 402
    if error.code == "method.not_allowed":
        return 405
    return STATUS_BY_TYPE.get(error.type, 500)


def json_response(
    body: Mapping[str, Any], status: int, headers: Mapping[str, str] | None = None
) -> Response:
    """A compact JSON response; non-ASCII stays readable and key order is kept."""
    content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return Response(content, status_code=status, headers=dict(headers or {}), media_type=_JSON)


def rate_headers(rate: RateSnapshot, unix_seconds: Callable[[float], float]) -> dict[str, str]:
    """``X-RateLimit-*`` of one limiter snapshot; the reset is whole Unix seconds, rounded up."""
    return {
        "X-RateLimit-Limit": str(rate.limit),
        "X-RateLimit-Remaining": str(rate.remaining),
        "X-RateLimit-Reset": str(math.ceil(unix_seconds(rate.reset_at))),
    }


def error_response(
    error: DomainError,
    request_id: str,
    unix_seconds: Callable[[float], float],
    extra_headers: Mapping[str, str] | None = None,
) -> Response:
    """The envelope for ``error`` with the headers its status requires."""
    status = status_of(error)
    headers: dict[str, str] = {"X-Request-Id": request_id}
    if error.rate is not None:
        headers.update(rate_headers(error.rate, unix_seconds))
    if status in (429, 503):
        # Every 429 and 503 says when to come back, even when the domain had no better bound.
        delay = error.retry_after if error.retry_after is not None else 1.0
        headers["Retry-After"] = str(max(math.ceil(delay), 1))
    headers.update(extra_headers or {})
    body = {
        "error": {
            "type": error.type,
            "code": error.code,
            "message": error.message,
            "param": error.param,
            "request_id": request_id,
        }
    }
    return json_response(body, status, headers)
