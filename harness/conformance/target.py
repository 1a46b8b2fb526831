"""The one seam through which the conformance harness reaches an implementation.

Why a seam: the same checks must run against a deployment by URL and against an in-process app,
and the harness must not know which it has (a check that could tell would test the simulator,
not the contract). A ``Target`` holds an ``httpx.Client`` (a real base URL, or an ASGI transport
around an app) and the credentials it was given by role; every request goes through
``Target.send``, which records an ``Exchange`` (what was sent and what came back) and hands it to
the observers (the per-response checks).

Credentials are named by role (``api``, ``other_org``, ``runs_read``, ``runs_write``, ``revoked``,
``admin``) so a reproduction can print ``$API_KEY`` instead of a secret.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = [
    "ROLE_PLACEHOLDERS",
    "Credentials",
    "Exchange",
    "SyncASGITransport",
    "Target",
    "TargetStalled",
    "TargetUnreachable",
]

#: The shell variable a reproduction names instead of each role's secret.
ROLE_PLACEHOLDERS: dict[str, str] = {
    "api": "$API_KEY",
    "other_org": "$OTHER_ORG_KEY",
    "runs_read": "$RUNS_READ_KEY",
    "runs_write": "$RUNS_WRITE_KEY",
    "revoked": "$REVOKED_KEY",
    "admin": "$SIM_ADMIN_TOKEN",
}


#: Headers curl sets from the connection itself, left out of a reproduction.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "accept-encoding", "connection"})
_INLINE_BODY_MAX = 4096


class TargetUnreachable(Exception):
    """The target did not answer at all (connection refused, DNS, a broken connection)."""


class TargetStalled(TargetUnreachable):
    """The target kept a request past the timeout (``--timeout``) without answering."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """The keys a run was given; every role but ``api`` is optional."""

    api: str
    other_org: str | None = None
    runs_read: str | None = None
    runs_write: str | None = None
    revoked: str | None = None
    admin: str | None = None

    def get(self, role: str) -> str | None:
        value = getattr(self, role, None)
        return value if isinstance(value, str) else None

    def secrets(self) -> dict[str, str]:
        """Each given secret mapped to its placeholder (for redaction)."""
        out: dict[str, str] = {}
        for role, placeholder in ROLE_PLACEHOLDERS.items():
            secret = self.get(role)
            if secret:
                out[secret] = placeholder
        return out


@dataclass(frozen=True)
class Exchange:
    """One request and its response, as observed on the wire."""

    method: str
    url: str
    path: str
    request_headers: Mapping[str, str]
    request_body: bytes
    status: int
    headers: httpx.Headers
    body: bytes
    operation: str = ""
    response: httpx.Response | None = field(default=None, compare=False, repr=False)
    #: The run's clock (target seconds) when the request was sent and its answer arrived, when
    #: the target was given a clock (``Target.clock``).
    sent_at: float | None = field(default=None, compare=False)
    received_at: float | None = field(default=None, compare=False)

    def json(self) -> Any:
        """The parsed body, or ``None`` when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def body_fits_inline(self) -> bool:
        """Whether a shell argument can carry the request body byte for byte: UTF-8 text
        without control characters (other than tab and newline) that curl would not read as
        ``@file``. Binary, multipart and long bodies go to a file instead."""
        body = self.request_body
        if not body:
            return True
        if len(body) > _INLINE_BODY_MAX or body.startswith(b"@"):
            return False
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return not any((ord(c) < 32 and c not in "\t\n") or c == "\x7f" for c in text)

    def curl(self, secrets: Mapping[str, str], body_file: str | None = None) -> str:
        """A shell command that sends the same request, with every known secret redacted.

        The body is sent with ``--data-binary``: inline when ``body_fits_inline``, else from
        ``body_file``, a file holding the exact bytes (the caller writes it)."""

        def redact(text: str) -> str:
            for secret, placeholder in secrets.items():
                text = text.replace(secret, placeholder)
            return text

        parts = ["curl", "-sS", "-i", "-X", self.method]
        for name, value in self.request_headers.items():
            if name.lower() in _TRANSPORT_HEADERS:
                continue
            # ``-H "Name:"`` would remove the header; ``-H "Name;"`` sends it empty.
            header = f"{name}: {redact(value)}" if value else f"{name};"
            parts += ["-H", _quote(header)]
        if self.request_body:
            if body_file is not None and not self.body_fits_inline():
                parts += ["--data-binary", _quote("@" + body_file)]
            else:
                text = self.request_body.decode("utf-8", errors="replace")
                parts += ["--data-binary", _quote(redact(text))]
        parts.append(_quote(redact(self.url)))
        return " ".join(parts)


def _quote(text: str) -> str:
    """Double-quote for a POSIX shell, so ``$API_KEY`` expands and nothing else does."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    escaped = escaped.replace("$", "\\$")
    for placeholder in ROLE_PLACEHOLDERS.values():
        escaped = escaped.replace("\\" + placeholder, placeholder)
    return f'"{escaped}"'


Observer = Callable[[Exchange], None]


@dataclass
class Target:
    """An implementation under test, reached through ``client``."""

    client: httpx.Client
    credentials: Credentials
    observers: list[Observer] = field(default_factory=list)
    #: The run's clock, in target seconds: each exchange of the contract is stamped with it.
    clock: Callable[[], float] | None = None

    @classmethod
    def remote(cls, base_url: str, credentials: Credentials, timeout: float = 30.0) -> Target:
        """A deployment by URL (``http(s)://host[:port]``, without ``/v1``)."""
        client = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout)
        return cls(client, credentials)

    @classmethod
    def in_process(cls, app: Any, credentials: Credentials) -> Target:
        """An ASGI app in this process (no socket)."""
        client = httpx.Client(transport=SyncASGITransport(app), base_url="http://testserver")
        return cls(client, credentials)

    @property
    def base_url(self) -> str:
        return str(self.client.base_url).rstrip("/")

    def close(self) -> None:
        self.client.close()

    def authorization(self, role: str | None) -> dict[str, str]:
        """The ``Authorization`` header of ``role`` (none for ``None``)."""
        if role is None:
            return {}
        secret = self.credentials.get(role)
        if secret is None:
            raise KeyError(f"no credential for role {role!r}")
        return {"Authorization": f"Bearer {secret}"}

    def request(
        self,
        method: str,
        path: str,
        *,
        role: str | None = "api",
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        operation: str = "",
        observe: bool = True,
    ) -> Exchange:
        """Send one request as ``role`` (its bearer key) and return the observed exchange."""
        merged = {**self.authorization(role), **dict(headers or {})}
        content: bytes | None = None
        if json_body is not None:
            content = json.dumps(json_body, separators=(",", ":")).encode()
            merged.setdefault("Content-Type", "application/json")
        request = self.client.build_request(
            method, path, headers=merged, content=content, params=dict(params or {})
        )
        return self.send(request, operation=operation or f"{method} {path}", observe=observe)

    def send(
        self, request: httpx.Request, *, operation: str = "", observe: bool = True
    ) -> Exchange:
        """Send a prepared request; observers see the exchange (unless ``observe`` is false)."""
        request.read()  # a multipart body is a stream; the exchange keeps its bytes
        # The simulator's admin API (the admin clock among it) is not stamped: reading the clock
        # there would recurse.
        clock = None if request.url.path.startswith("/_sim/") else self.clock
        sent_at = clock() if clock is not None else None
        try:
            response = self.client.send(request)
            body = response.read()
        except httpx.TimeoutException as exc:
            seconds = self.client.timeout.read
            raise TargetStalled(
                f"{request.method} {request.url.path} got no answer within {seconds:g} s"
            ) from exc
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"{request.method} {request.url}: {exc}") from exc
        response.close()
        received_at = clock() if clock is not None else None
        exchange = Exchange(
            method=request.method,
            url=str(request.url),
            path=request.url.path,
            request_headers=dict(request.headers),
            request_body=request.content,
            status=response.status_code,
            headers=response.headers,
            body=body,
            operation=operation or f"{request.method} {request.url.path}",
            response=response,
            sent_at=sent_at,
            received_at=received_at,
        )
        for observer in list(self.observers) if observe else []:
            observer(exchange)
        return exchange


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
