"""The HTTP door (``harness.runner.door``): a scenario's traffic through a real facade.

``HttpDoor`` sends each call as an HTTP request built from the contract's route table (path,
query and header parameters, JSON body) on an event loop of its own: SimPy processes are plain
generators, so each request is run to completion before the process continues, exactly like a
blocking call. Two targets:

* ``HttpDoor(Target.in_process(platform))``: the platform's own facade (the demo's scenario);
* ``HttpDoor.remote(base_url, secrets)``: a deployment by URL (``avatar-sim replay``). Each
  caller's key is replaced by the deployment's secret ``secrets`` names for it, so the runner's
  clients, which hold the keys of a local platform, speak for the deployment's keys. A refusal
  becomes the domain error of its envelope's ``type``, with the wait its ``Retry-After`` or
  ``X-RateLimit-Reset`` names in any form (``harness.conformance.pacing.headers_hint``); an
  answer that is no envelope (a proxy's 502) or no answer at all becomes ``ServiceUnavailable``
  (``http_<status>`` or ``target_unreachable``), which the clients treat as any refusal.

Called where an event loop already runs in the thread (a Jupyter kernel's), asyncio refuses to
run a second one there, so the door's loop then runs its requests on a helper thread of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx

from harness.conformance.pacing import headers_hint
from harness.target import InProcessTarget, Target, UrlTarget
from sim.accounts import Caller
from sim.asgi.openapi import load_openapi
from sim.asgi.routes import Route, RouteTable
from sim.asgi.validation import SpecSchemas
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
from sim.platform import Outcome, Params

__all__ = ["Answered", "HttpDoor"]

_ERRORS: dict[str, type[DomainError]] = {
    cls.type: cls
    for cls in (
        InvalidRequest, AuthenticationFailed, PermissionDenied, NotFound, Conflict,
        Unprocessable, RateLimited, QuotaExceeded, ServiceUnavailable, InternalError,
    )
}  # fmt: skip

#: Told of every answer that is not a refusal: ``(operation_id, outcome)``.
Answered = Callable[[str, Outcome], None]


class HttpDoor:
    """``Platform.call`` answered over HTTP by ``target``: the simulator's facade in process,
    or a deployment by URL (``remote``)."""

    def __init__(
        self,
        target: Target,
        *,
        secrets: Mapping[str, str] | None = None,
        answered: Answered | None = None,
    ) -> None:
        if isinstance(target, InProcessTarget):
            table = target.app.state.route_table
        else:
            table = RouteTable(SpecSchemas(load_openapi()))
        self._setup(table, target.async_client(), secrets)
        self._remote = target.kind == "url"
        self._answered = answered

    @classmethod
    def remote(
        cls,
        base_url: str,
        secrets: Mapping[str, str],
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        answered: Answered | None = None,
    ) -> HttpDoor:
        """A deployment at ``base_url``: a caller whose key ``secrets`` maps sends the secret
        it maps to (any other caller its own key). ``transport``: httpx's (a test's in-process
        app); ``answered`` is told of every answer that is not a refusal."""
        target = UrlTarget(base_url, timeout=timeout, async_transport=transport)
        return cls(target, secrets=secrets, answered=answered)

    def _setup(
        self, table: RouteTable, client: httpx.AsyncClient, secrets: Mapping[str, str] | None
    ) -> None:
        self._routes: dict[str, Route] = {r.operation_id: r for r in table.routes}
        self._loop = asyncio.new_event_loop()
        self._helper: ThreadPoolExecutor | None = None
        self._client = client
        self._secrets = secrets
        self.requests = 0

    def close(self) -> None:
        self._complete(self._client.aclose())
        self._loop.close()
        if self._helper is not None:
            self._helper.shutdown()

    def _complete(self, awaitable: Any) -> Any:
        """Run ``awaitable`` to its end on the door's loop: in this thread, or on the helper
        thread when this thread already runs a loop (one request at a time either way)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._loop.run_until_complete(awaitable)
        if self._helper is None:
            self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="http-door")
        return self._helper.submit(self._loop.run_until_complete, awaitable).result()

    def __enter__(self) -> HttpDoor:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _secret(self, caller: Caller) -> str:
        secret = caller.key.secret
        return secret if self._secrets is None else self._secrets.get(secret, secret)

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
            headers["Authorization"] = f"Bearer {self._secret(caller)}"
        body = params.get("body")
        return self._client.request(
            route.method, path, params=query, headers=headers, json=body if route.body else None
        )

    def call(
        self, operation_id: str, caller: Caller | None, params: Params, *, reads_body: bool = True
    ) -> Outcome:  # ``reads_body``: HTTP always answers the whole body, which has the id
        route = self._routes[operation_id]
        values = params() if callable(params) else params
        try:
            response = self._complete(self._request(route, values, caller))
        except httpx.TransportError as error:
            if not self._remote:
                raise
            raise ServiceUnavailable("target_unreachable", f"{operation_id}: {error}") from None
        self.requests += 1
        if response.status_code >= 400:
            raise self._refusal(response)
        replayed = response.headers.get("idempotent-replayed", "false") == "true"
        if response.headers.get("content-type", "").startswith("application/json"):
            outcome = Outcome(body=response.json(), replayed=replayed)
        else:
            outcome = Outcome(body=response.content, media_type=response.headers["content-type"])
        if self._answered is not None:
            self._answered(operation_id, outcome)
        return outcome

    def _refusal(self, response: httpx.Response) -> DomainError:
        try:
            error = response.json()["error"]
            kind, code, message = error["type"], error["code"], error["message"]
        except (ValueError, KeyError, TypeError):
            if not self._remote:
                raise
            return ServiceUnavailable(
                f"http_{response.status_code}",
                f"an answer without the error envelope: {response.text[:200]!r}",
                retry_after=headers_hint(response.headers),
            )
        if self._remote:
            retry = headers_hint(response.headers)
        else:
            header = response.headers.get("retry-after")
            retry = float(header) if header is not None else None
        return _ERRORS.get(kind, InternalError)(
            code, message, param=error.get("param"), retry_after=retry
        )
