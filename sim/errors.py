"""Domain errors: what went wrong, in the contract's words, never as an HTTP status.

Every refusal the simulated service can give is one of these. Each carries the envelope's
``type`` (the category), a stable ``code``, a human ``message`` and the offending ``param``
(a dot-path, or ``None``). The facade (``sim.asgi``) is the one place that maps ``type`` to an
HTTP status and renders the envelope; the domain never knows about statuses.

Each subclass is one category, declared in one line at the end of this module with its
``type`` (``class NotFound(DomainError, type="not_found")``); the codes are listed in
spec/DECISIONS.md (GAP-ERR-1). ``RateLimited`` and ``ServiceUnavailable`` carry ``retry_after``
(seconds); rate-limit refusals also carry the limiter's ``rate`` snapshot so the facade can
render the ``X-RateLimit-*`` headers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

__all__ = [
    "AuthenticationFailed",
    "Conflict",
    "DomainError",
    "ErrorType",
    "InternalError",
    "InvalidRequest",
    "NotFound",
    "PermissionDenied",
    "QuotaExceeded",
    "RateLimited",
    "RateSnapshot",
    "ServiceUnavailable",
    "Unprocessable",
]

ErrorType = Literal[
    "invalid_request",
    "authentication",
    "permission",
    "not_found",
    "conflict",
    "unprocessable",
    "rate_limit",
    "quota_exceeded",
    "internal",
    "service_unavailable",
]


@dataclass(frozen=True, slots=True)
class RateSnapshot:
    """The state of one rate limit after a request: rendered as ``X-RateLimit-*`` headers."""

    limit: int
    remaining: int
    reset_at: float  # simulated seconds since the epoch at which a slot frees up


class DomainError(Exception):
    """Base of every refusal; ``type`` is fixed per subclass, ``code`` per raise."""

    type: ClassVar[ErrorType] = "internal"

    def __init_subclass__(cls, *, type: ErrorType | None = None, **options: Any) -> None:
        """``class NotFound(DomainError, type="not_found")``: a category names its ``type`` in
        its declaration; a subclass of a category keeps the category's."""
        super().__init_subclass__(**options)
        if type is not None:
            cls.type = type

    def __init__(
        self,
        code: str,
        message: str,
        *,
        param: str | None = None,
        retry_after: float | None = None,
        rate: RateSnapshot | None = None,
    ) -> None:
        # args are (code, message) so that ``type(e)(*e.args)`` rebuilds the error: SimPy does
        # exactly that when an exception crosses a process boundary.
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.param = param
        self.retry_after = retry_after
        self.rate = rate

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, param={self.param!r})"


# The categories: each line is one ``type`` of the envelope and when the domain raises it.
class InvalidRequest(DomainError, type="invalid_request"): ...  # unreadable, or a seed-named 400


class AuthenticationFailed(DomainError, type="authentication"): ...  # missing, unknown, revoked key


class PermissionDenied(DomainError, type="permission"): ...  # scope or plan does not allow it


class NotFound(DomainError, type="not_found"): ...  # unknown id, or another organization's


class Conflict(DomainError, type="conflict"): ...  # idempotency reuse, resource state


class Unprocessable(DomainError, type="unprocessable"): ...  # schema or semantic validation


class RateLimited(DomainError, type="rate_limit"): ...  # request rate, queue capacity


class QuotaExceeded(DomainError, type="quota_exceeded"): ...  # concurrency caps, credits


class ServiceUnavailable(DomainError, type="service_unavailable"): ...  # no free worker


class InternalError(DomainError, type="internal"): ...  # a bug; never expected
