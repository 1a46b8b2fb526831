"""Deliberate contract violations, each an ASGI wrapper around the real facade (HAR-6).

Each ``Mutation`` rewrites requests on their way in, or buffered responses on their way out, and
names the conformance check that must report it. The harness has never seen these
implementations: it only meets them through the ``Target``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Keys = dict[str, str]


@dataclass
class Reply:
    """A buffered response a mutation may edit."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode()
        return next((v.decode() for k, v in self.headers if k.lower() == wanted), None)

    def drop(self, name: str) -> None:
        wanted = name.lower().encode()
        self.headers = [(k, v) for k, v in self.headers if k.lower() != wanted]

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def set_json(self, value: Any) -> None:
        self.body = json.dumps(value).encode()


def header_of(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode()
    return next((v.decode() for k, v in scope["headers"] if k.lower() == wanted), None)


def set_header(scope: Scope, name: str, value: str) -> None:
    wanted = name.lower().encode()
    scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != wanted] + [
        (wanted, value.encode())
    ]


RequestEdit = Callable[[Scope, Keys], None]
ResponseEdit = Callable[[Scope, Reply, Keys], None]


class Mutated:
    """The facade with one request edit and/or one response edit applied."""

    def __init__(
        self, app: App, keys: Keys, request: RequestEdit | None, response: ResponseEdit | None
    ) -> None:
        self.app, self.keys, self.request, self.response = app, keys, request, response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope["path"]).startswith("/_sim/"):
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        scope["headers"] = list(scope["headers"])
        if self.request is not None:
            self.request(scope, self.keys)
        if self.response is None:
            await self.app(scope, receive, send)
            return
        reply = Reply(0, [], b"")

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                reply.status = message["status"]
                reply.headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                reply.body += message.get("body", b"")

        await self.app(scope, receive, capture)
        assert self.response is not None
        self.response(scope, reply, self.keys)
        reply.drop("content-length")
        headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})


@dataclass(frozen=True)
class Mutation:
    name: str
    caught_by: str
    request: RequestEdit | None = None
    response: ResponseEdit | None = None
    fuzz: bool = False  # whether only fuzzed traffic reaches the fault

    def wrap(self, app: App, keys: Keys) -> Mutated:
        return Mutated(app, keys, self.request, self.response)


# -- the faults --------------------------------------------------------------------------------


def _error(reply: Reply) -> dict[str, Any] | None:
    body = reply.json()
    if reply.status >= 400 and isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body
    return None


def extra_envelope_field(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = _error(reply)
    if body is not None:
        body["error"]["doc_url"] = "https://docs.example/errors"
        reply.set_json(body)


def drop_request_id(scope: Scope, reply: Reply, keys: Keys) -> None:
    if scope["method"] == "GET" and scope["path"] == "/v1/models":
        reply.drop("x-request-id")


def request_id_mismatch(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = _error(reply)
    if body is not None:
        body["error"]["request_id"] = "req_00000000000000000000000000"
        reply.set_json(body)


def wrong_error_type(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = _error(reply)
    if body is not None and reply.status == 404:
        body["error"]["type"] = "invalid_request"
        reply.set_json(body)


def camel_case_code(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = _error(reply)
    if body is not None and reply.status == 401:
        body["error"]["code"] = "ApiKeyInvalid"
        reply.set_json(body)


def accept_revoked_key(scope: Scope, keys: Keys) -> None:
    if header_of(scope, "authorization") == f"Bearer {keys['revoked']}":
        set_header(scope, "authorization", f"Bearer {keys['unrestricted']}")


def ignore_scopes(scope: Scope, keys: Keys) -> None:
    if header_of(scope, "authorization") == f"Bearer {keys['runs_read']}":
        set_header(scope, "authorization", f"Bearer {keys['unrestricted']}")


def status_needs_a_key(scope: Scope, reply: Reply, keys: Keys) -> None:
    if scope["path"] == "/v1/status" and header_of(scope, "authorization") is None:
        reply.status = 401
        reply.set_json(
            {
                "error": {
                    "type": "authentication",
                    "code": "api_key.missing",
                    "message": "A key is required.",
                    "param": None,
                    "request_id": reply.header("x-request-id"),
                }
            }
        )


def drop_ratelimit_remaining(scope: Scope, reply: Reply, keys: Keys) -> None:
    reply.drop("x-ratelimit-remaining")


def drop_retry_after(scope: Scope, reply: Reply, keys: Keys) -> None:
    reply.drop("retry-after")


def replay_with_a_new_id(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = reply.json()
    if reply.header("idempotent-replayed") and isinstance(body, dict):
        body["id"] = "sess_01ZZZZZZZZZZZZZZZZZZZZZZZZ"
        reply.set_json(body)


def cursor_as_number(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = reply.json()
    if isinstance(body, dict) and isinstance(body.get("next_cursor"), str):
        body["next_cursor"] = 1
        reply.set_json(body)


def ignore_starting_after(scope: Scope, keys: Keys) -> None:
    query = [(k, v) for k, v in parse_qsl(scope["query_string"].decode()) if k != "starting_after"]
    scope["query_string"] = urlencode(query).encode()


def end_reopens(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = reply.json()
    ended = str(scope["path"]).endswith("/end") and isinstance(body, dict)
    if ended and body.get("status") == "canceled":
        body["status"] = "queued"
        reply.set_json(body)


def quota_server_error(scope: Scope, reply: Reply, keys: Keys) -> None:
    if scope["path"] == "/v1/billing/quota" and reply.status == 200:
        reply.status = 500
        reply.set_json(
            {
                "error": {
                    "type": "internal",
                    "code": "internal_error",
                    "message": "boom",
                    "param": None,
                    "request_id": reply.header("x-request-id"),
                }
            }
        )


def avatars_as_array(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = reply.json()
    if scope["path"] == "/v1/avatars" and isinstance(body, dict) and "data" in body:
        reply.set_json(body["data"])  # scripts that expect an object must not crash the run


MUTATIONS: tuple[Mutation, ...] = (
    Mutation("extra_envelope_field", "error_envelope_closed", response=extra_envelope_field),
    Mutation("drop_request_id", "request_id_echoed", response=drop_request_id),
    Mutation("request_id_mismatch", "request_id_echoed", response=request_id_mismatch),
    Mutation("wrong_error_type", "error_type_matches_status", response=wrong_error_type),
    Mutation("camel_case_code", "error_code_format", response=camel_case_code),
    Mutation("accept_revoked_key", "revoked_key_rejected", request=accept_revoked_key),
    Mutation("ignore_scopes", "scope_runs_read", request=ignore_scopes),
    Mutation("status_needs_a_key", "public_endpoints", response=status_needs_a_key),
    Mutation("drop_ratelimit_remaining", "rate_limit_headers", response=drop_ratelimit_remaining),
    Mutation("drop_retry_after", "retry_after_present", response=drop_retry_after),
    Mutation("replay_with_a_new_id", "idempotent_replay", response=replay_with_a_new_id),
    Mutation("cursor_as_number", "next_cursor_type", response=cursor_as_number),
    Mutation("ignore_starting_after", "list_walk", request=ignore_starting_after),
    Mutation("end_reopens", "session_lifecycle", response=end_reopens),
    Mutation("avatars_as_array", "list_envelope", response=avatars_as_array),
    Mutation("quota_server_error", "not_a_server_error", response=quota_server_error, fuzz=True),
)
