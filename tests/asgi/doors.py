"""The same request through both doors: the HTTP facade and ``Platform.call`` (SIM-7).

``Doors`` holds two platforms built from the same configuration and seed, each with the same
organizations, one driven over HTTP (the in-process app) and one through ``Platform.call`` with
the parameters a Python caller passes. ``Doors.both(request)`` sends one request to each and
returns both answers, so a test can demand they are equal: the same body, or the same refusal
(type, code, param and message).

Bodies go over HTTP exactly as a JSON client would spell them: a lone surrogate as its ``\\uXXXX``
escape, an infinity as ``1e999`` (the only JSON spelling that reads back as one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from harness.target import SyncASGITransport
from sim.accounts import Caller
from sim.asgi import create_app
from sim.asgi.routes import Route
from sim.config import SimConfig
from sim.errors import DomainError
from sim.platform import Platform

__all__ = ["Answer", "Doors", "Request", "answer_of", "json_text", "refusal_of", "url_of"]

Answer = dict[str, Any]
"""A success body, or ``{"error": [type, code, param, message]}``."""

_INFINITY = "\x00infinity\x00"


@dataclass(frozen=True)
class Request:
    operation_id: str
    params: dict[str, Any] = field(default_factory=dict)  # path and query parameters
    body: Any = None
    has_body: bool = True  # False: no body at all (the parameter is absent)
    key: str = "unrestricted"
    idempotency_key: str | None = None


def json_text(value: Any) -> bytes:
    """``value`` as JSON text a client could send, infinities spelled ``1e999``."""

    def mark(item: Any) -> Any:
        if isinstance(item, float) and item in (float("inf"), float("-inf")):
            return _INFINITY if item > 0 else "-" + _INFINITY
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        return item

    text = json.dumps(mark(value))  # ASCII only: lone surrogates become \uXXXX escapes
    marker = json.dumps(_INFINITY)
    text = text.replace(json.dumps("-" + _INFINITY), "-1e999").replace(marker, "1e999")
    return text.encode("ascii")


def url_of(route: Route, params: dict[str, Any]) -> str:
    """The URL of ``route`` with ``params``: path parameters in the path, the rest as the query."""
    path_names = {p.name for p in route.parameters_in("path")}
    path = route.path.format(
        **{k: quote(str(v), safe="/") for k, v in params.items() if k in path_names}
    )
    query = {k: v for k, v in params.items() if k not in path_names}
    return path + (f"?{urlencode(query)}" if query else "")


def refusal_of(error: DomainError) -> Answer:
    return {"error": [error.type, error.code, error.param, error.message]}


def call_answer(
    platform: Platform, operation_id: str, caller: Caller | None, params: dict[str, Any]
) -> Answer:
    """What ``Platform.call`` answers: the body of a success, or the refusal as ``refusal_of``."""
    try:
        outcome = platform.call(operation_id, caller, params)
    except DomainError as error:
        return refusal_of(error)
    assert isinstance(outcome.body, dict)
    return outcome.body


def answer_of(response: httpx.Response) -> Answer:
    """The body of a success, or the refusal in the same form as ``refusal_of``."""
    body = response.json()
    if response.status_code >= 400:
        error = body["error"]
        return {"error": [error["type"], error["code"], error["param"], error["message"]]}
    return dict(body)


class Doors:
    def __init__(self, config: SimConfig | None = None, plans: tuple[str, ...] = ("enterprise",)):
        self.config = config or SimConfig()
        self.python = Platform.create(self.config)
        self.served = Platform.create(self.config)
        self.keys = [self.python.admin.create_organization(f"Org {p}", p)["keys"] for p in plans]
        self.http_keys = [
            self.served.admin.create_organization(f"Org {p}", p)["keys"] for p in plans
        ]
        self.app = create_app(self.served)
        self.routes: dict[str, Route] = {
            r.operation_id: r for r in self.app.state.route_table.routes
        }
        self.client = httpx.Client(transport=SyncASGITransport(self.app), base_url="http://sim")

    def both(self, request: Request, org: int = 0) -> tuple[Answer, Answer]:
        return self.by_python(request, org), self.by_http(request, org)

    def advance(self, seconds: float) -> None:
        self.python.clock.advance(seconds)
        self.served.clock.advance(seconds)

    def by_python(self, request: Request, org: int = 0) -> Answer:
        platform = self.python
        caller = platform.authenticate(f"Bearer {self.keys[org][request.key]}")
        params = dict(request.params)
        if request.has_body:
            params["body"] = request.body
        if request.idempotency_key is not None:
            params["idempotency_key"] = request.idempotency_key
        return call_answer(platform, request.operation_id, caller, params)

    def by_http(self, request: Request, org: int = 0) -> Answer:
        return answer_of(self.send(request, org))

    def send(self, request: Request, org: int = 0) -> httpx.Response:
        route = self.routes[request.operation_id]
        headers = {"Authorization": f"Bearer {self.http_keys[org][request.key]}"}
        if request.idempotency_key is not None:
            headers["Idempotency-Key"] = request.idempotency_key
        content = None
        if request.has_body:
            headers["Content-Type"] = "application/json"
            content = json_text(request.body)
        return self.client.request(
            route.method, url_of(route, request.params), headers=headers, content=content
        )
