"""An ASGI wrapper that edits requests and responses of the real facade, for other
implementations in the conformance tests: the gap-variant (other legal choices, HAR-5) and the
mutants (deliberate violations, HAR-6).

An edit sees one ``Call``: the request (scope and buffered body), the organization's keys, the
platform's clock and a state dictionary shared by every call of one wrapper (for edits that
count, such as a token bucket). A request edit may change the call or answer it itself
(``call.answer``); a response edit changes the buffered ``Reply``. Answers the wrapper makes
itself carry an ``X-Request-Id`` like the facade's and pass through the response edits too.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Keys = dict[str, str]

_request_ids = itertools.count(1)


class JsonBody:
    """A buffered body read and written as JSON."""

    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def set_json(self, value: Any) -> None:
        self.body = json.dumps(value).encode()


@dataclass
class Reply(JsonBody):
    """A buffered response an edit may change."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode()
        return next((v.decode() for k, v in self.headers if k.lower() == wanted), None)

    def drop(self, name: str) -> None:
        wanted = name.lower().encode()
        self.headers = [(k, v) for k, v in self.headers if k.lower() != wanted]

    def set_header(self, name: str, value: str) -> None:
        self.drop(name)
        self.headers.append((name.lower().encode(), value.encode()))

    def error(self) -> dict[str, Any] | None:
        """The envelope's ``error`` object of a refusal, else ``None``."""
        body = self.json()
        if self.status >= 400 and isinstance(body, dict) and isinstance(body.get("error"), dict):
            return body["error"]  # type: ignore[no-any-return]
        return None

    def edit_error(self, **fields: Any) -> None:
        body = self.json()
        if self.error() is not None:
            body["error"].update(fields)
            self.set_json(body)


@dataclass
class Call(JsonBody):
    """One request as an edit sees it."""

    scope: Scope
    body: bytes
    keys: Keys
    now: Callable[[], float]
    state: dict[str, Any]
    answer: Reply | None = None
    notes: dict[str, Any] = field(default_factory=dict)  # from a request edit to its response

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    @property
    def path(self) -> str:
        return str(self.scope["path"])

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode()
        return next((v.decode() for k, v in self.scope["headers"] if k.lower() == wanted), None)

    def set_header(self, name: str, value: str) -> None:
        wanted = name.lower().encode()
        kept = [(k, v) for k, v in self.scope["headers"] if k.lower() != wanted]
        self.scope["headers"] = [*kept, (wanted, value.encode())]

    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(bytes(self.scope["query_string"]).decode(), keep_blank_values=True)

    def set_query(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.scope["query_string"] = urlencode(list(pairs)).encode()

    def refuse(self, status: int, kind: str, code: str, message: str, param: str | None) -> None:
        """Answer with the error envelope, as the facade would."""
        request_id = f"req_{next(_request_ids):026d}"
        envelope = {
            "error": {
                "type": kind,
                "code": code,
                "message": message,
                "param": param,
                "request_id": request_id,
            }
        }
        headers = [(b"content-type", b"application/json"), (b"x-request-id", request_id.encode())]
        self.answer = Reply(status, headers, json.dumps(envelope).encode())


RequestEdit = Callable[[Call], None]
ResponseEdit = Callable[[Call, Reply], None]


@dataclass(frozen=True)
class Edits:
    """Request and response edits applied in order; ``config`` names SimConfig changes."""

    request: tuple[RequestEdit, ...] = ()
    response: tuple[ResponseEdit, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)


class Edited:
    """The facade behind ``edits``; the simulator's admin API (``/_sim``) passes untouched."""

    def __init__(self, app: App, keys: Keys, edits: Edits, now: Callable[[], float]) -> None:
        self.app, self.keys, self.edits, self.now = app, keys, edits, now
        self.state: dict[str, Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope["path"]).startswith("/_sim/"):
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        scope["headers"] = list(scope["headers"])
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        call = Call(scope, body, self.keys, self.now, self.state)
        for request_edit in self.edits.request:
            request_edit(call)
            if call.answer is not None:
                break
        reply = call.answer or await self._forward(call)
        for response_edit in self.edits.response:
            response_edit(call, reply)
        reply.drop("content-length")
        headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body})

    async def _forward(self, call: Call) -> Reply:
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": call.body, "more_body": False}

        call.scope["headers"] = [
            (k, v) for k, v in call.scope["headers"] if k.lower() != b"content-length"
        ] + [(b"content-length", str(len(call.body)).encode())]
        reply = Reply(0, [], b"")

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                reply.status = message["status"]
                reply.headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                reply.body += message.get("body", b"")

        await self.app(call.scope, replay, capture)
        return reply


def objects(node: Any) -> Iterable[dict[str, Any]]:
    """Every JSON object in ``node``, outermost first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from objects(value)
