"""``create_app``: the simulated platform behind the exact ``/v1`` contract, as a Starlette app.

The app is assembled from four parts and holds no state of its own (the platform holds it all):

* ``RequestContext`` (outermost): request ids, the header-size limit, the 500 safety net;
* the contract documents and their docs page (``contract_routes``), public, outside ``/v1``;
* the ``/_sim`` admin routes, when an admin token is configured;
* ``OperationsApp`` for everything else, routed by the table read from the spec.

One exception handler renders every ``DomainError`` (the status map lives in ``envelope``), and
one renders Starlette's own 404/405 from the admin router, so every refusal has the envelope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Router

from sim.asgi.admin import admin_routes
from sim.asgi.configured import configured
from sim.asgi.context import RequestContext, log_failure, request_id_of
from sim.asgi.contract_routes import contract_routes
from sim.asgi.envelope import error_response
from sim.asgi.openapi import load_openapi
from sim.asgi.operations import MethodNotAllowed, OperationsApp
from sim.asgi.request_log import RequestLog
from sim.asgi.routes import RouteTable
from sim.asgi.validation import SpecSchemas
from sim.errors import DomainError, InvalidRequest, NotFound
from sim.platform import Platform

__all__ = ["create_app"]


def create_app(
    platform: Platform,
    *,
    admin_token: str | None = None,
    spec: Mapping[str, Any] | None = None,
    admin_extras: Sequence[BaseRoute] = (),
) -> Starlette:
    """The facade for ``platform``; ``spec`` defaults to the project's ``spec/openapi.yaml``.

    Requests are validated against the spec with its ``x-config`` bounds taken from the
    platform's running configuration (``sim.asgi.configured``). ``admin_extras`` are more routes
    under ``/_sim`` (served mode's console), mounted with the admin routes when there is a token;
    each guards itself (``sim.asgi.admin.admin_only``) or is public on purpose."""
    document = configured(spec if spec is not None else load_openapi(), platform.config)
    table = RouteTable(SpecSchemas(document))
    unix_seconds = platform.clock.unix_seconds

    async def on_domain_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, DomainError)
        if exc.type == "internal":  # a domain bug reported as such: logged like any other 500
            log_failure(request.scope, request_id_of(request.scope), exc)
        extra = {"Allow": ", ".join(exc.allow)} if isinstance(exc, MethodNotAllowed) else None
        return error_response(exc, request_id_of(request.scope), unix_seconds, extra)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        error: DomainError
        if exc.status_code == 405:
            error = InvalidRequest("method.not_allowed", f"{request.method} is not allowed here.")
        else:
            # scope["path"], not request.url: building the URL decodes the query string as
            # strict UTF-8, and a query that is not would turn this 404 into a 500.
            error = NotFound("route.not_found", f"No route for {request.scope['path']}.")
        extra = {k: v for k, v in (exc.headers or {}).items() if k.lower() == "allow"}
        return error_response(error, request_id_of(request.scope), unix_seconds, extra)

    routes: list[BaseRoute] = contract_routes(spec)
    requests = None
    if admin_token is not None:
        requests = RequestLog(platform.config.admin.request_log_size)
        sim_routes = admin_routes(
            platform.admin,
            platform.clock,
            token=admin_token,
            config=platform.config,
            requests=requests,
        )
        sim_routes += admin_extras
        routes.append(Mount("/_sim", app=Router(sim_routes, redirect_slashes=False)))
    routes.append(Mount("", app=OperationsApp(platform, table, requests)))
    middleware = [
        Middleware(
            RequestContext,
            new_request_id=platform.new_request_id,
            unix_seconds=unix_seconds,
            headers_max_bytes=platform.config.limits.request_headers_max_bytes,
        )
    ]
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={DomainError: on_domain_error, HTTPException: on_http_error},
    )
    app.state.route_table = table
    return app
