"""Simulator controls under ``/_sim/``: time, audio, faults, organizations, webhooks, and a
session's lifecycle events with their reasons (SIM-8).

These endpoints are not part of the contract and never appear in the spec. They exist so a client
of a served simulator (or a test driving the in-process app over HTTP) can do what a Python
caller does with ``platform.clock.advance`` and ``platform.admin``. They are guarded by a bearer
admin token; without a configured token they do not exist (404, like any unknown route).

Bodies are small JSON objects, read as JSON whatever the ``Content-Type`` says (``curl -d``
sends ``application/x-www-form-urlencoded`` unless told otherwise), checked like ``/v1`` bodies:
first the values (``sim.values``: no lone surrogate, no infinity), then a pydantic model (closed:
unknown fields are refused), then the configured bounds (``SimConfig.admin``: the clock moves at
most ``clock_advance_max_seconds`` per call and never past its horizon, durations and the worker
pool are bounded). Every refusal uses the same envelope as ``/v1``, and no input can leave the
platform unable to answer a public route (GAP-SERVE-3).

The reads (``GET``) show what a tenant's key cannot: every organization and its sessions, any
session, the active faults, the pool against time, the last HTTP requests (HAR-31). Each is a
thin view of ``PlatformAdmin`` or of the facade's ``RequestLog``; their query parameters are
checked like ``/v1``'s (an unknown one is refused, ``limit`` within the page bounds).
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from sim.accounts import Environment, Scope
from sim.admin import PlatformAdmin
from sim.asgi.body import parse_json, read_body
from sim.asgi.context import request_id_of
from sim.asgi.envelope import json_response
from sim.asgi.request_log import RequestLog
from sim.config import SimConfig
from sim.errors import AuthenticationFailed, NotFound, Unprocessable
from sim.values import check_values

__all__ = ["admin_only", "admin_routes"]


class ClockLike(Protocol):
    @property
    def now(self) -> float: ...
    @property
    def horizon(self) -> float: ...
    def timestamp(self, seconds: float | None = None) -> str: ...
    def advance(self, seconds: float) -> None: ...
    def advance_to(self, target: float) -> None: ...
    def next_event_at(self) -> float | None: ...


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Advance(_Body):
    seconds: float = Field(ge=0, allow_inf_nan=False)


class Step(_Body):
    within: float = Field(ge=0, allow_inf_nan=False)


class NewOrganization(_Body):
    name: str = Field(min_length=1, max_length=200)
    plan: str = Field(default="free", min_length=1)
    environment: Environment = "production"
    concurrency_override: int | None = None


class NewKey(_Body):
    org_id: str
    scopes: list[Scope] | None = None
    environment: Environment = "production"


class RevokeKey(_Body):
    key: str


class DescribeKey(_Body):
    key: str


class ConcurrencyOverride(_Body):
    limit: int | None


class Audio(_Body):
    kind: Literal["speech", "silence"]
    duration: float = Field(gt=0, allow_inf_nan=False)


class SessionFault(_Body):
    session_id: str


class Capacity(_Body):
    workers: int = Field(ge=0)


class QueueSize(_Body):
    size: int = Field(ge=0)


class SlowStartup(_Body):
    extra_seconds: float = Field(ge=0, allow_inf_nan=False)
    duration: float | None = Field(default=None, gt=0, allow_inf_nan=False)


class HeartbeatLoss(_Body):
    session_id: str
    duration: float = Field(gt=0, allow_inf_nan=False)


class PurgeFailure(_Body):
    enabled: bool


class Webhook(_Body):
    org_id: str
    url: str = Field(min_length=1)
    event_types: list[str] | None = None


Model = TypeVar("Model", bound=_Body)
Endpoint = Callable[[Request], Awaitable[Response]]


def admin_only(token: str, handler: Endpoint) -> Endpoint:
    """``handler`` behind the admin token: 401 with the envelope unless it is presented."""

    async def endpoint(request: Request) -> Response:
        _authorize(request, token)
        return await handler(request)

    return endpoint


def admin_routes(
    admin: PlatformAdmin,
    clock: ClockLike,
    *,
    token: str,
    config: SimConfig,
    requests: RequestLog | None = None,
) -> list[BaseRoute]:
    """The ``/_sim`` routes (paths relative to the mount), each behind the admin token;
    ``requests`` is the facade's log of HTTP requests (``GET /requests``; empty without one)."""
    body_limit = config.limits.request_body_max_bytes
    bounds = config.admin
    pages = config.limits
    log = requests if requests is not None else RequestLog(0)

    async def body_of(request: Request, model: type[Model]) -> Model:
        raw = await read_body(request.receive, body_limit, request.headers.get("content-length"))
        data = parse_json(raw) if raw.strip() else {}
        check_values({"body": data}, max_depth=config.limits.json_max_depth)
        try:
            return model.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            param = ".".join(str(p) for p in first["loc"]) or None
            raise Unprocessable(
                _code(first["type"]), f"{param}: {first['msg']}", param=param
            ) from None

    def ok(request: Request, body: dict[str, Any], status: int = 200) -> Response:
        return json_response(body, status, {"X-Request-Id": request_id_of(request.scope)})

    def clock_body() -> dict[str, Any]:
        return {"now": clock.timestamp(), "seconds": clock.now}

    async def get_clock(request: Request) -> Response:
        return ok(request, clock_body())

    async def advance(request: Request) -> Response:
        body = await body_of(request, Advance)
        _at_most("seconds", body.seconds, bounds.clock_advance_max_seconds)
        if clock.now + body.seconds > clock.horizon:
            raise Unprocessable(
                "clock.horizon",
                f"seconds: the clock cannot pass {clock.timestamp(clock.horizon)}.",
                param="seconds",
            )
        clock.advance(body.seconds)
        return ok(request, clock_body())

    async def step(request: Request) -> Response:
        """The clock to its next scheduled event, at most ``within`` seconds ahead: what an
        in-process wait does, so a manual served clock stops where in-process time would."""
        body = await body_of(request, Step)
        _at_most("within", body.within, bounds.clock_advance_max_seconds)
        deadline = min(clock.now + body.within, clock.horizon)
        due = clock.next_event_at()
        clock.advance_to(deadline if due is None else max(clock.now, min(due, deadline)))
        return ok(request, clock_body())

    async def organizations(request: Request) -> Response:
        body = await body_of(request, NewOrganization)
        created = admin.create_organization(
            body.name,
            body.plan,
            environment=body.environment,
            concurrency_override=body.concurrency_override,
        )
        return ok(request, created, 201)

    async def keys(request: Request) -> Response:
        body = await body_of(request, NewKey)
        return ok(request, admin.create_key(body.org_id, body.scopes, body.environment), 201)

    async def describe(request: Request) -> Response:
        body = await body_of(request, DescribeKey)
        return ok(request, admin.describe_key(body.key))

    async def revoke(request: Request) -> Response:
        body = await body_of(request, RevokeKey)
        try:
            return ok(request, admin.revoke_key(body.key))
        except KeyError:
            raise NotFound("api_key.not_found", "No such API key.", param="key") from None

    async def concurrency(request: Request) -> Response:
        body = await body_of(request, ConcurrencyOverride)
        org_id = str(request.path_params["org_id"])
        return ok(request, admin.set_concurrency_override(org_id, body.limit))

    async def audio(request: Request) -> Response:
        body = await body_of(request, Audio)
        _at_most("duration", body.duration, bounds.duration_max_seconds)
        session_id = str(request.path_params["session_id"])
        return ok(request, admin.inject_audio(session_id, body.kind, body.duration))

    async def clear_buffer(request: Request) -> Response:
        return ok(request, admin.clear_buffer(str(request.path_params["session_id"])))

    async def session_events(request: Request) -> Response:
        return ok(request, admin.session_events(str(request.path_params["session_id"])))

    async def worker_crash(request: Request) -> Response:
        body = await body_of(request, SessionFault)
        return ok(request, admin.crash_worker(body.session_id))

    async def capacity(request: Request) -> Response:
        body = await body_of(request, Capacity)
        _at_most("workers", body.workers, bounds.workers_max)
        return ok(request, admin.set_capacity(body.workers))

    async def pool(request: Request) -> Response:
        return ok(request, admin.capacity())

    async def queue(request: Request) -> Response:
        body = await body_of(request, QueueSize)
        _at_most("size", body.size, bounds.workers_max)
        return ok(request, admin.set_queue_size(body.size))

    async def slow_startup(request: Request) -> Response:
        body = await body_of(request, SlowStartup)
        _at_most("extra_seconds", body.extra_seconds, bounds.duration_max_seconds)
        if body.duration is not None:
            _at_most("duration", body.duration, bounds.duration_max_seconds)
        return ok(request, admin.slow_startup(body.extra_seconds, body.duration))

    async def heartbeat_loss(request: Request) -> Response:
        body = await body_of(request, HeartbeatLoss)
        _at_most("duration", body.duration, bounds.duration_max_seconds)
        return ok(request, admin.lose_heartbeats(body.session_id, body.duration))

    async def purge_failure(request: Request) -> Response:
        body = await body_of(request, PurgeFailure)
        return ok(request, admin.fail_purges(body.enabled))

    async def webhooks(request: Request) -> Response:
        body = await body_of(request, Webhook)
        return ok(request, admin.register_webhook(body.org_id, body.url, body.event_types), 201)

    async def unregister(request: Request) -> Response:
        return ok(request, admin.unregister_webhook(str(request.path_params["endpoint_id"])))

    async def deliveries(request: Request) -> Response:
        query = _query(request, {"org_id"})
        return ok(request, admin.webhook_deliveries(_required(query, "org_id")))

    def limit_of(query: dict[str, str]) -> int:
        text = query.get("limit")
        if text is None:
            return pages.page_size_max
        if not text.isdigit() or not pages.page_size_min <= int(text) <= pages.page_size_max:
            raise Unprocessable(
                "validation.range",
                f"limit: a whole number from {pages.page_size_min} to {pages.page_size_max}.",
                param="limit",
            )
        return int(text)

    async def list_organizations(request: Request) -> Response:
        _query(request, set())
        return ok(request, admin.organizations())

    async def list_sessions(request: Request) -> Response:
        query = _query(request, {"org_id", "status", "limit"})
        org_id = _required(query, "org_id")
        found = admin.sessions(org_id, status=query.get("status"), limit=limit_of(query))
        return ok(request, found)

    async def session(request: Request) -> Response:
        _query(request, set())
        return ok(request, admin.session(str(request.path_params["session_id"])))

    async def faults(request: Request) -> Response:
        _query(request, set())
        return ok(request, admin.faults())

    async def pool_over_time(request: Request) -> Response:
        _query(request, set())
        return ok(request, admin.pool())

    async def recent_requests(request: Request) -> Response:
        query = _query(request, {"key_id", "status", "limit"})
        limit = limit_of(query)
        found = log.newest(key_id=query.get("key_id"), status=query.get("status"), limit=limit)
        data = [entry.to_resource(clock.timestamp) for entry in found]
        return ok(request, {"object": "list", "data": data})

    table: list[tuple[str, str, Callable[[Request], Awaitable[Response]]]] = [
        ("/clock", "GET", get_clock),
        ("/clock/advance", "POST", advance),
        ("/clock/step", "POST", step),
        ("/organizations", "POST", organizations),
        ("/organizations/{org_id}/concurrency", "POST", concurrency),
        ("/keys", "POST", keys),
        ("/keys/revoke", "POST", revoke),
        ("/keys/describe", "POST", describe),
        ("/sessions/{session_id}/audio", "POST", audio),
        ("/sessions/{session_id}/clear_buffer", "POST", clear_buffer),
        ("/sessions/{session_id}/events", "GET", session_events),
        ("/faults/worker_crash", "POST", worker_crash),
        ("/faults/capacity", "POST", capacity),
        ("/faults/capacity", "GET", pool),
        ("/faults/queue", "POST", queue),
        ("/faults/slow_startup", "POST", slow_startup),
        ("/faults/heartbeat_loss", "POST", heartbeat_loss),
        ("/faults/purge_failure", "POST", purge_failure),
        ("/webhooks", "POST", webhooks),
        ("/webhooks/deliveries", "GET", deliveries),
        ("/webhooks/{endpoint_id}", "DELETE", unregister),
        ("/organizations", "GET", list_organizations),
        ("/sessions", "GET", list_sessions),
        ("/sessions/{session_id}", "GET", session),
        ("/faults", "GET", faults),
        ("/pool", "GET", pool_over_time),
        ("/requests", "GET", recent_requests),
    ]
    return [
        Route(path, admin_only(token, handler), methods=[method]) for path, method, handler in table
    ]


def _query(request: Request, known: set[str]) -> dict[str, str]:
    """The query's parameters, each given once and each one of ``known`` (422 otherwise)."""
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        name = unknown[0]
        raise Unprocessable(
            "validation.unknown_parameter", f"Unknown query parameter {name!r}.", param=name
        )
    for name in known:
        if len(request.query_params.getlist(name)) > 1:
            raise Unprocessable("validation.type", f"{name} is given more than once.", param=name)
    return dict(request.query_params)


def _required(query: dict[str, str], name: str) -> str:
    value = query.get(name)
    if not value:
        raise Unprocessable("validation.required", f"{name} is required.", param=name)
    return value


def _at_most(param: str, value: float, limit: float) -> None:
    if value > limit:
        raise Unprocessable(
            "validation.range", f"{param}: at most {limit:g} (SimConfig.admin).", param=param
        )


def _authorize(request: Request, token: str) -> None:
    header = request.headers.get("authorization")
    if header is None:
        raise AuthenticationFailed("admin_token.missing", "Send `Authorization: Bearer <token>`.")
    scheme, _, presented = header.partition(" ")
    if scheme != "Bearer" or not hmac.compare_digest(presented.encode(), token.encode()):
        raise AuthenticationFailed("admin_token.invalid", "This admin token is not valid.")


def _code(pydantic_type: str) -> str:
    """pydantic's error kinds in the facade's ``validation.*`` vocabulary."""
    if pydantic_type == "missing":
        return "validation.required"
    if pydantic_type == "extra_forbidden":
        return "validation.unknown_field"
    if pydantic_type in ("literal_error", "enum"):
        return "validation.enum"
    if pydantic_type.startswith(("greater_than", "less_than", "too_short", "too_long")):
        return "validation.range"
    if pydantic_type == "finite_number":
        return "validation.range"
    return "validation.type"
