"""The HTTP door (``harness.runner.door``): a scenario's traffic through the real facade.

``HttpDoor`` sends each call as an HTTP request built from the contract's route table (path,
query and header parameters, JSON body) to the in-process ASGI app, on an event loop of its own:
SimPy processes are plain generators, so each request is run to completion before the process
continues, exactly like a blocking call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from sim.accounts import Caller
from sim.asgi.app import create_app
from sim.asgi.routes import Route
from sim.errors import (
    AuthenticationFailed,
    Conflict,
    DomainError,
    InternalError,
    InvalidRequest,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    RateLimited,
    ServiceUnavailable,
    Unprocessable,
)
from sim.platform import Outcome, Params, Platform

__all__ = ["HttpDoor"]

_ERRORS: dict[str, type[DomainError]] = {
    cls.type: cls
    for cls in (
        InvalidRequest, AuthenticationFailed, PermissionDenied, NotFound, Conflict,
        Unprocessable, RateLimited, QuotaExceeded, ServiceUnavailable, InternalError,
    )
}  # fmt: skip
BASE_URL = "http://avatar-sim.local"


class HttpDoor:
    """``Platform.call`` answered over HTTP by the in-process facade of ``platform``."""

    def __init__(self, platform: Platform) -> None:
        app = create_app(platform)
        self._routes: dict[str, Route] = {r.operation_id: r for r in app.state.route_table.routes}
        self._loop = asyncio.new_event_loop()
        self._client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE_URL)
        self.requests = 0

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()

    def __enter__(self) -> HttpDoor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _request(self, route: Route, params: Mapping[str, Any], caller: Caller | None) -> Any:
        path_names = {p.name for p in route.parameters_in("path")}
        path = route.path.format(
            **{k: quote(str(v), safe="/") for k, v in params.items() if k in path_names}
        )
        query = {p.name: params[p.name] for p in route.parameters_in("query") if p.name in params}
        headers = {}
        for parameter in route.parameters_in("header"):
            key = parameter.name.lower().replace("-", "_")  # the name Platform.call expects
            if params.get(key) is not None:
                headers[parameter.name] = str(params[key])
        if caller is not None:
            headers["Authorization"] = f"Bearer {caller.key.secret}"
        body = params.get("body")
        return self._client.request(
            route.method, path, params=query, headers=headers, json=body if route.body else None
        )

    def call(
        self, operation_id: str, caller: Caller | None, params: Params, *, reads_body: bool = True
    ) -> Outcome:  # ``reads_body``: HTTP always answers the whole body, which has the id
        route = self._routes[operation_id]
        values = params() if callable(params) else params
        response = self._loop.run_until_complete(self._request(route, values, caller))
        self.requests += 1
        if response.status_code >= 400:
            error = response.json()["error"]
            retry = response.headers.get("retry-after")
            raise _ERRORS.get(error["type"], InternalError)(
                error["code"],
                error["message"],
                param=error.get("param"),
                retry_after=float(retry) if retry is not None else None,
            )
        replayed = response.headers.get("idempotent-replayed", "false") == "true"
        if response.headers.get("content-type", "").startswith("application/json"):
            return Outcome(body=response.json(), replayed=replayed)
        return Outcome(body=response.content, media_type=response.headers["content-type"])
