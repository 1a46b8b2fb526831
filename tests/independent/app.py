"""The HTTP surface: Starlette routes over :class:`.service.Service`.

Every route goes through :func:`endpoint`, which gives the request its ``req_`` id, brings the
timeline up to date, authenticates (except on the two public routes), and turns an
:class:`.errors.ApiError` into the error envelope with the headers the refusal needs. Unknown
paths and methods get the envelope too. There is no admin or test-control route: the service is
a black box.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from . import pipecat
from .auth import (
    Principal,
    authenticate,
    require_general,
    require_scopes,
    require_unrestricted,
    scope_error,
)
from .catalog import MODELS, render_model
from .errors import ApiError, invalid, not_found
from .idempotency import check_key, fingerprint
from .lists import page
from .service import Service
from .sessions import STATES
from .validation import parse_json_object, query_limit

log = logging.getLogger(__name__)
CLIENT_REQUEST_ID = re.compile(r"^req_[A-Za-z0-9]{1,60}$")
RUN_ID = re.compile(r"^run_[0-9A-Z]{26}$")


@dataclass
class Ctx:
    request: Request
    svc: Service
    request_id: str
    t: float
    principal: Principal | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def p(self) -> Principal:
        assert self.principal is not None
        return self.principal

    @property
    def base(self) -> str:
        return str(self.request.base_url).rstrip("/")

    @property
    def query(self) -> dict[str, str]:
        return dict(self.request.query_params)


Result = Response | tuple[int, dict[str, Any]]
Handler = Callable[[Ctx], Awaitable[Result]]


def _request_id(svc: Service, request: Request, t: float) -> str:
    sent = request.headers.get("x-request-id")
    if svc.reading.honor_client_request_id and sent and CLIENT_REQUEST_ID.match(sent):
        return sent
    return svc.store.new_id("req", t)


def error_response(ctx: Ctx, err: ApiError) -> Response:
    faults = ctx.svc.faults
    envelope = err.envelope(ctx.request_id)
    if err.status == 404 and faults.on("request_id_mismatch_on_not_found"):
        envelope["error"]["request_id"] = ctx.svc.store.new_id("req", ctx.t)
    headers = {**ctx.headers, **err.headers}
    if err.status == 429 and faults.on("error_envelope_extra_field_on_429"):
        retry = headers.get("Retry-After")
        envelope["error"]["retry_after"] = int(retry) if retry else None
    return JSONResponse(envelope, err.status, headers=headers)


def _finish(ctx: Ctx, response: Response) -> Response:
    for name, value in ctx.headers.items():
        response.headers.setdefault(name, value)
    missing_401 = response.status_code == 401 and ctx.svc.faults.on(
        "request_id_header_missing_on_401"
    )
    if not missing_401:
        response.headers["X-Request-Id"] = ctx.request_id
    return response


def endpoint(svc: Service, handler: Handler, *, public: bool = False, allow_revoked: bool = False):
    async def run(request: Request) -> Response:
        t = svc.tick()
        ctx = Ctx(request, svc, _request_id(svc, request, t), t)
        try:
            if not public:
                ctx.principal = authenticate(
                    request.headers.get("authorization"),
                    svc.store,
                    svc.reading,
                    svc.faults,
                    allow_revoked=allow_revoked,
                )
            result = await handler(ctx)
            if isinstance(result, tuple):
                status, body = result
                result = JSONResponse(body, status)
        except ApiError as err:
            result = error_response(ctx, err)
        except Exception:  # a bug here must not take the service down
            log.exception("unhandled error")
            result = error_response(ctx, ApiError(500, "internal_error", "Something went wrong."))
        return _finish(ctx, result)

    return run


# -- public ---------------------------------------------------------------------------------


async def get_status(ctx: Ctx) -> Result:
    svc = ctx.svc
    header = ctx.request.headers.get("authorization")
    if header and svc.faults.on("status_rejects_bad_key"):
        authenticate(header, svc.store, svc.reading, svc.faults)
    components = ("api", "realtime_sessions", "runs", "avatars", "billing")
    now = svc.clock.iso(ctx.t)
    if svc.reading.public_style == "a":
        return 200, {
            "status": "operational",
            "updated_at": now,
            "components": [{"name": c, "status": "operational"} for c in components],
        }
    return 200, {
        "object": "status",
        "indicator": "none",
        "description": "All systems operational",
        "components": dict.fromkeys(components, "operational"),
        "updated_at": now,
    }


async def get_plans(ctx: Ctx) -> Result:
    svc = ctx.svc
    if svc.faults.on("plans_require_auth"):
        authenticate(ctx.request.headers.get("authorization"), svc.store, svc.reading, svc.faults)
    return 200, svc.billing.plans()


# -- billing and models ---------------------------------------------------------------------


async def get_quota(ctx: Ctx) -> Result:
    require_general(ctx.p, ctx.svc.reading, ctx.svc.faults)
    return 200, ctx.svc.billing.quota(ctx.p.org, ctx.t)


async def get_usage(ctx: Ctx) -> Result:
    require_general(ctx.p, ctx.svc.reading, ctx.svc.faults)
    return 200, ctx.svc.billing.usage(ctx.p.org, ctx.query, ctx.t)


async def list_models(ctx: Ctx) -> Result:
    svc = ctx.svc
    if svc.faults.on("models_refuse_scoped_keys") and ctx.p.key.scopes is not None:
        raise scope_error(svc.faults, "an unrestricted key")
    strings = svc.faults.on("model_execution_modes_string")
    data = [
        render_model(m, svc.reading, modes_as_string=strings and m.kind == "media")
        for m in MODELS.values()
    ]
    body: dict[str, Any] = {"object": "list", "data": data}
    if svc.reading.models_has_more:
        body["has_more"] = False
    return 200, body


# -- sessions -------------------------------------------------------------------------------


def rate_gate(ctx: Ctx) -> None:
    """Spend one unit of the key's session-create budget, or refuse with 429."""
    svc = ctx.svc
    decision = svc.rate.hit(ctx.p.key.id, ctx.t)
    rate_headers = svc.rate.headers(decision, ctx.t)
    if svc.reading.rate_headers == "always":
        ctx.headers.update(rate_headers)
    if decision.allowed:
        return
    headers: dict[str, str] = {}
    if not svc.faults.on("rate_limit_429_missing_retry_after"):
        headers["Retry-After"] = str(max(1, math.ceil(decision.retry_after)))
    if svc.faults.on("rate_limit_429_missing_headers"):
        for name in rate_headers:
            ctx.headers.pop(name, None)
    else:
        headers.update(rate_headers)
    raise ApiError(
        429,
        "rate_limit",
        "Too many session creates; slow down.",
        type="rate_limit",
        headers=headers,
    )


def replay(ctx: Ctx, status: int, body: dict[str, Any]) -> Response:
    response = JSONResponse(body, status)
    if ctx.svc.reading.idempotency_replay_header:
        response.headers["Idempotent-Replayed"] = "true"
    return response


async def create_session(ctx: Ctx) -> Result:
    svc, p = ctx.svc, ctx.p
    require_general(p, svc.reading, svc.faults)
    rate_gate(ctx)
    max_len = 254 if svc.faults.on("idempotency_key_255_refused") else 255
    key = check_key(ctx.request.headers.get("idempotency-key"), svc.reading, max_len=max_len)
    raw = await ctx.request.body()
    scope = svc.idempotency.scope(p.key.id, p.org.id)
    print_ = fingerprint(raw, svc.reading)
    if key is not None and not svc.faults.on("idempotency_replay_creates_session"):
        record = svc.idempotency.lookup(
            scope,
            "sessions",
            key,
            print_,
            ctx.t,
            check_body=not svc.faults.on("idempotency_conflict_not_detected"),
        )
        if record is not None:
            return replay(ctx, record.status, record.body)
    body = parse_json_object(raw, svc.reading)
    params = svc.sessions.parse_create(body, p)
    svc.sessions.usable_avatar(params["avatar_id"], p)
    svc.sessions.admit(p)
    session = svc.sessions.create(p, params, ctx.t, surface="api")
    status = svc.reading.create_status["sessions"]
    rendered = svc.sessions.render(session, ctx.t, worker_token=params["worker_token"])
    if key is not None:
        svc.idempotency.remember(scope, "sessions", key, print_, status, rendered, ctx.t)
    return status, rendered


async def list_sessions(ctx: Ctx) -> Result:
    svc, p = ctx.svc, ctx.p
    reading = svc.reading
    require_general(p, reading, svc.faults)
    limit = query_limit(ctx.query, reading, default=reading.default_page_size)
    name = reading.session_status_filter
    wanted: set[str] = set()
    for raw in ctx.request.query_params.getlist(name):
        values = raw.split(",") if reading.session_status_filter == "status" else [raw]
        for value in (v.strip() for v in values if v.strip()):
            if value not in STATES:
                raise invalid(
                    reading, "parameter.invalid_value", f"Unknown status {value!r}.", name
                )
            wanted.add(value)
    store = svc.store
    items = [s for s in store.sessions.values() if s.org_id == p.org.id]
    if wanted and not svc.faults.on("session_status_filter_ignored"):
        items = [s for s in items if s.status in wanted]
    items.sort(
        key=lambda s: (s.created_at, store.order_of(s.id)),
        reverse=reading.list_order == "newest_first",
    )
    return 200, page(
        items,
        limit=limit,
        starting_after=ctx.query.get("starting_after"),
        id_of=lambda s: s.id,
        render=lambda s: svc.sessions.render(s, ctx.t, in_list=True),
        reading=reading,
        faults=svc.faults,
        inclusive_cursor=svc.faults.on("session_pages_repeat_cursor_item"),
    )


async def get_session(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_general(ctx.p, svc.reading, svc.faults)
    session = svc.sessions.get(ctx.request.path_params["session_id"], ctx.p)
    return 200, svc.sessions.render(session, ctx.t)


async def end_session(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_general(ctx.p, svc.reading, svc.faults)
    session = svc.sessions.get(ctx.request.path_params["session_id"], ctx.p)
    status = svc.sessions.end(session, ctx.t)
    return status, svc.sessions.render(session, ctx.t)


async def create_pipecat_session(ctx: Ctx) -> Result:
    svc, p = ctx.svc, ctx.p
    require_general(p, svc.reading, svc.faults)
    if svc.reading.rate_limit_pipecat:
        rate_gate(ctx)
    body = parse_json_object(await ctx.request.body(), svc.reading)
    params = pipecat.parse(svc, body, p)
    svc.sessions.usable_avatar(params["avatar_id"], p)
    svc.sessions.admit(p)
    session = svc.sessions.create(p, params, ctx.t, surface="pipecat", pipecat=True)
    host = ctx.request.headers.get("host") or ctx.request.url.netloc
    return svc.reading.create_status["pipecat"], {
        "object": "pipecat.session",
        "relay": pipecat.relay(svc, host),
        "session": svc.sessions.render(session, ctx.t),
    }


# -- avatars --------------------------------------------------------------------------------


async def create_avatar(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_general(ctx.p, svc.reading, svc.faults)
    content_type = ctx.request.headers.get("content-type", "")
    avatar = svc.avatars.upload(ctx.p, content_type, await ctx.request.body(), ctx.t)
    return svc.reading.create_status["avatars"], svc.avatars.render(avatar)


async def list_avatars(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_general(ctx.p, svc.reading, svc.faults)
    return 200, svc.avatars.list(ctx.p, ctx.query)


async def get_avatar(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_general(ctx.p, svc.reading, svc.faults)
    avatar = svc.avatars.get(ctx.request.path_params["avatar_id"], ctx.p)
    return 200, svc.avatars.render(avatar, by_id=True)


# -- runs -----------------------------------------------------------------------------------


def require_any_scope(ctx: Ctx, *scopes: str) -> None:
    """A deliberately loose check, used only where a fault widens a scope requirement."""
    key = ctx.p.key
    if key.scopes is not None and not key.scopes & set(scopes):
        raise scope_error(ctx.svc.faults, scopes[0])


async def create_run(ctx: Ctx) -> Result:
    svc, p = ctx.svc, ctx.p
    model_id = f"{ctx.request.path_params['publisher']}/{ctx.request.path_params['name']}"
    model = MODELS.get(model_id)
    media = model is not None and model.kind == "media"
    if media and not svc.faults.on("media_run_with_write_scope_only"):
        require_scopes(p, svc.faults, "runs:read", "runs:write")
    else:
        require_scopes(p, svc.faults, "runs:write")
    model = svc.runs.model(model_id)
    raw = await ctx.request.body()
    key = None
    if not svc.faults.on("run_idempotency_ignored"):
        key = check_key(ctx.request.headers.get("idempotency-key"), svc.reading)
    scope = svc.idempotency.scope(p.key.id, p.org.id)
    print_ = fingerprint(raw, svc.reading)
    route = f"run:{model_id}"
    if key is not None:
        record = svc.idempotency.lookup(scope, route, key, print_, ctx.t)
        if record is not None:
            return replay(ctx, record.status, record.body)
    params = svc.runs.parse(model, parse_json_object(raw, svc.reading))
    run = svc.runs.create(p, model, params, ctx.t)
    status = svc.reading.create_status["runs"]
    rendered = svc.runs.render(run, ctx.base, ctx.t)
    if key is not None:
        svc.idempotency.remember(scope, route, key, print_, status, rendered, ctx.t)
    return status, rendered


async def list_runs(ctx: Ctx) -> Result:
    svc = ctx.svc
    if svc.faults.on("runs_list_with_write_scope"):
        require_any_scope(ctx, "runs:read", "runs:write")
    else:
        require_scopes(ctx.p, svc.faults, "runs:read")
    return 200, svc.runs.list(ctx.p, ctx.query, ctx.base, ctx.t)


async def get_run(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_scopes(ctx.p, svc.faults, "runs:read")
    run = svc.runs.get(ctx.request.path_params["run_id"], ctx.p)
    return 200, svc.runs.render(run, ctx.base, ctx.t)


async def get_run_status(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_scopes(ctx.p, svc.faults, "runs:read")
    run = svc.runs.get(ctx.request.path_params["run_id"], ctx.p)
    return 200, svc.runs.render_status(run, ctx.t)


async def list_run_events(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_scopes(ctx.p, svc.faults, "runs:read")
    run = svc.runs.get(ctx.request.path_params["run_id"], ctx.p)
    return 200, svc.runs.events(run, ctx.query)


async def cancel_run(ctx: Ctx) -> Result:
    svc = ctx.svc
    if svc.faults.on("cancel_allowed_with_read_scope"):
        require_any_scope(ctx, "runs:write", "runs:read")
    else:
        require_scopes(ctx.p, svc.faults, "runs:write")
    run = svc.runs.get(ctx.request.path_params["run_id"], ctx.p)
    svc.runs.cancel(run, ctx.t)
    return 200, svc.runs.render(run, ctx.base, ctx.t)


async def delete_run(ctx: Ctx) -> Result:
    svc, p = ctx.svc, ctx.p
    if svc.reading.delete_scope == "unrestricted":
        require_unrestricted(p, svc.faults)
    else:
        require_scopes(p, svc.faults, "runs:write")
    if not p.org.plan.can_delete_runs and not svc.faults.on("run_delete_not_enterprise_only"):
        raise ApiError(
            403, svc.reading.plan_refusal_code, "Run deletion is for enterprise accounts only."
        )
    run_id = ctx.request.path_params["run_id"]
    if not RUN_ID.match(run_id):
        # the endpoint names 422 for validation explicitly, whatever the reading's general choice
        raise ApiError(422, "run_id.invalid", "run_id is not a run id.", param="run_id")
    run = svc.runs.get(run_id, p)
    deletion = svc.runs.delete(p, run, ctx.t)
    status = 200 if svc.faults.on("run_delete_returns_200") else 202
    return status, svc.runs.render_deletion(deletion)


# -- assets ---------------------------------------------------------------------------------


def require_asset_access(ctx: Ctx) -> None:
    if ctx.svc.reading.non_run_scope == "unrestricted":
        require_scopes(ctx.p, ctx.svc.faults, "runs:read")


async def list_assets(ctx: Ctx) -> Result:
    require_asset_access(ctx)
    return 200, ctx.svc.assets.list(ctx.p, ctx.query, ctx.base, ctx.t)


async def get_asset(ctx: Ctx) -> Result:
    require_asset_access(ctx)
    asset = ctx.svc.assets.get(ctx.request.path_params["asset_id"], ctx.p)
    return 200, ctx.svc.assets.render(asset, ctx.base, ctx.t)


async def get_asset_content(ctx: Ctx) -> Result:
    svc = ctx.svc
    require_asset_access(ctx)
    asset = svc.assets.get(
        ctx.request.path_params["asset_id"],
        ctx.p,
        any_org=svc.faults.on("asset_content_cross_tenant"),
    )
    if asset.deleted_at is not None:
        raise not_found("asset", asset.id)
    return 200, svc.assets.content(asset, ctx.base, ctx.t)


async def get_signed_file(ctx: Ctx) -> Result:
    q = ctx.query
    asset = ctx.svc.assets.check_signature(
        ctx.request.path_params["asset_id"], q.get("expires", ""), q.get("sig", ""), ctx.t
    )
    return Response(asset.content, 200, media_type=asset.media_type)


# -- fallbacks ------------------------------------------------------------------------------


def fallback_handler(svc: Service):
    async def handle(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        t = svc.tick()
        ctx = Ctx(request, svc, _request_id(svc, request, t), t)
        if exc.status_code == 404 and svc.faults.on("unknown_route_plain_404"):
            return _finish(ctx, PlainTextResponse("Not Found", 404))
        try:
            if svc.reading.unauthenticated_unknown_route == 401 and request.url.path.startswith(
                "/v1"
            ):
                authenticate(
                    request.headers.get("authorization"), svc.store, svc.reading, svc.faults
                )
            if exc.status_code == 405:
                err = ApiError(405, "method_not_allowed", f"{request.method} is not allowed here.")
                err.headers.update(exc.headers or {})
            elif exc.status_code == 404:
                err = ApiError(404, "route.not_found", f"No route matches {request.url.path}.")
            else:
                err = ApiError(exc.status_code, "http_error", str(exc.detail))
            raise err
        except ApiError as err:
            return _finish(ctx, error_response(ctx, err))

    return handle


def build_app(svc: Service) -> Starlette:
    def r(path: str, handler: Handler, method: str, **kw: Any) -> Route:
        return Route(path, endpoint(svc, handler, **kw), methods=[method])

    revoked_ok = svc.faults.on("revoked_key_passes_models")
    cancel = (
        "/v1/runs/{run_id}/cancel"
        if svc.reading.cancel_path == "slash"
        else "/v1/runs/{run_id}:cancel"
    )
    routes = [
        r("/v1/status", get_status, "GET", public=True),
        r("/v1/billing/plans", get_plans, "GET", public=True),
        r("/v1/billing/quota", get_quota, "GET"),
        r("/v1/usage", get_usage, "GET"),
        r("/v1/models", list_models, "GET", allow_revoked=revoked_ok),
        r("/v1/sessions", create_session, "POST"),
        r("/v1/sessions", list_sessions, "GET"),
        r("/v1/sessions/{session_id}", get_session, "GET"),
        r("/v1/sessions/{session_id}/end", end_session, "POST"),
        r("/v1/pipecat/sessions", create_pipecat_session, "POST"),
        r("/v1/avatars", create_avatar, "POST"),
        r("/v1/avatars", list_avatars, "GET"),
        r("/v1/avatars/{avatar_id}", get_avatar, "GET"),
        r("/v1/run/{publisher}/{name}", create_run, "POST"),
        r("/v1/runs", list_runs, "GET"),
        r(cancel, cancel_run, "POST"),
        r("/v1/runs/{run_id}", get_run, "GET"),
        r("/v1/runs/{run_id}", delete_run, "DELETE"),
        r("/v1/runs/{run_id}/status", get_run_status, "GET"),
        r("/v1/runs/{run_id}/events", list_run_events, "GET"),
        r("/v1/assets", list_assets, "GET"),
        r("/v1/assets/{asset_id}", get_asset, "GET"),
        r("/v1/assets/{asset_id}/content", get_asset_content, "GET"),
        r("/files/{asset_id}/{file_name}", get_signed_file, "GET", public=True),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: fallback_handler(svc)})
    app.router.redirect_slashes = False  # a 307 would be a non-2xx answer without the envelope
    app.state.service = svc
    return app
