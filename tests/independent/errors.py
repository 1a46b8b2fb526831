"""The error envelope and the exception that carries it through the handlers.

Every non-2xx answer is ``{"error": {type, code, message, param, request_id}}`` with nothing
else in it; handlers raise :class:`ApiError` and the endpoint wrapper in :mod:`.app` renders it
with the request's id and any headers the refusal must carry (Retry-After, rate-limit headers).
The helpers here hold the policy choices that depend on the reading, such as whether a
validation failure is a 400 or a 422, and whether another tenant's resource is a 403 or a 404.
"""

from __future__ import annotations

from typing import Any

from .readings import Reading

TYPE_BY_STATUS = {
    400: "invalid_request",
    401: "authentication",
    402: "quota_exceeded",
    403: "permission",
    404: "not_found",
    405: "invalid_request",
    409: "conflict",
    413: "invalid_request",
    415: "invalid_request",
    422: "unprocessable",
    429: "rate_limit",
    500: "internal",
    503: "service_unavailable",
}


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        type: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type or TYPE_BY_STATUS.get(status, "internal")
        self.code = code
        self.message = message
        self.param = param
        self.headers = dict(headers or {})

    def envelope(self, request_id: str) -> dict[str, Any]:
        return {
            "error": {
                "type": self.type,
                "code": self.code,
                "message": self.message,
                "param": self.param,
                "request_id": request_id,
            }
        }


def invalid(reading: Reading, code: str, message: str, param: str | None = None) -> ApiError:
    """A validation failure of a body field or a query parameter."""
    return ApiError(reading.validation_status, code, message, param=param)


def bad_request(code: str, message: str, param: str | None = None) -> ApiError:
    """A 400 the spec names explicitly (transport.unsupported, metadata.reserved_key, JSON)."""
    return ApiError(400, code, message, param=param)


def not_found(kind: str, ident: str) -> ApiError:
    return ApiError(404, f"{kind}.not_found", f"No {kind} {ident!r} exists.")


def foreign(reading: Reading, kind: str, ident: str) -> ApiError:
    """Another organization's resource: refused or hidden, by reading."""
    if reading.cross_tenant_status == 403:
        return ApiError(
            403, "resource.forbidden", f"The {kind} {ident!r} belongs to another organization."
        )
    return not_found(kind, ident)


def conflict(code: str, message: str) -> ApiError:
    return ApiError(409, code, message)
