"""Per-request context every response needs, whatever path produced it.

``RequestContext`` is the outermost ASGI middleware of the facade. For each HTTP request it:

* draws the ``req_`` id (from the platform's dedicated stream, so HTTP traffic never shifts the
  domain's ids) and puts it in ``scope["state"]`` for the handlers;
* refuses headers over the configured total size with 400 ``headers.too_large`` (GAP-ERR-3)
  before anything parses them;
* stamps ``X-Request-Id`` on every response, the envelope's own and any other;
* turns an unexpected exception into the 500 ``internal``/``internal_error`` envelope: never a
  traceback to the client, and nothing after the failure runs, so a bug cannot half-apply a
  request twice. The traceback goes to the ``avatar_sim.facade`` logger with the request id,
  so the 500 a client reports can be found in the server's log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sim.asgi.envelope import error_response
from sim.errors import DomainError, InternalError, InvalidRequest

__all__ = ["FACADE_LOGGER", "REQUEST_ID", "RequestContext", "log_failure", "request_id_of"]

REQUEST_ID = "request_id"
FACADE_LOGGER = "avatar_sim.facade"

_log = logging.getLogger(FACADE_LOGGER)


def log_failure(scope: Scope, request_id: str, error: BaseException) -> None:
    """Log a request that ended in a 500, with its traceback and request id."""
    _log.error(
        "500 answering %s %s (request %s)",
        scope.get("method", "?"),
        scope.get("path", "?"),
        request_id,
        exc_info=(type(error), error, error.__traceback__),
    )


def request_id_of(scope: Scope) -> str:
    """The request id ``RequestContext`` assigned to ``scope``."""
    return str(scope["state"][REQUEST_ID])


class RequestContext:
    def __init__(
        self,
        app: ASGIApp,
        *,
        new_request_id: Callable[[], str],
        unix_seconds: Callable[[float], float],
        headers_max_bytes: int,
    ) -> None:
        self.app = app
        self._new_request_id = new_request_id
        self._unix_seconds = unix_seconds
        self._headers_max_bytes = headers_max_bytes
        #: The last unexpected exception, kept for tests and debugging (never sent to clients).
        self.last_exception: Exception | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = self._new_request_id()
        scope.setdefault("state", {})
        scope["state"][REQUEST_ID] = request_id
        stamp = ("x-request-id".encode("latin-1"), request_id.encode("latin-1"))
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != stamp[0]]
                message = {**message, "headers": [*headers, stamp]}
            await send(message)

        size = sum(len(k) + len(v) for k, v in scope.get("headers", []))
        if size > self._headers_max_bytes:
            error: DomainError = InvalidRequest(
                "headers.too_large",
                f"The request headers exceed {self._headers_max_bytes} bytes in total.",
            )
            await error_response(error, request_id, self._unix_seconds)(
                scope, receive, send_with_id
            )
            return
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            self.last_exception = exc
            log_failure(scope, request_id, exc)
            if started:  # the response is already on its way; nothing sane is left to send
                return
            error = InternalError("internal_error", "An unexpected error occurred.")
            await error_response(error, request_id, self._unix_seconds)(
                scope, receive, send_with_id
            )
