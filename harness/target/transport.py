"""A synchronous httpx client into an ASGI app in this process, with no socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx

__all__ = ["SyncASGITransport"]


class SyncASGITransport(httpx.BaseTransport):
    """httpx's ASGI transport driven from a synchronous client: one event loop per request.

    A request without ``Content-Length`` (a generator body) reaches the app chunk by chunk, as
    over a socket, so a size limit can be seen to stop reading early.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self._inner = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        streamed = "content-length" not in request.headers
        chunks = list(request.stream) if streamed else [request.read()]  # type: ignore[arg-type]

        async def body() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk

        async def go() -> tuple[int, httpx.Headers, bytes]:
            inner = httpx.Request(
                request.method,
                request.url,
                headers=request.headers,
                content=body() if streamed else chunks[0],
            )
            response = await self._inner.handle_async_request(inner)
            return response.status_code, response.headers, await response.aread()

        status, headers, data = asyncio.run(go())
        # A stream (not ``content``) so the client times the response like a network one.
        return httpx.Response(
            status, headers=headers, stream=httpx.ByteStream(data), request=request
        )
