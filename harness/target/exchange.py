"""One request and its answer as seen on the wire, and the ``curl`` that sends it again.

Why a record of its own: the conformance model judges exchanges, a capture stores them and a
failure's reproduction prints them, whoever sent the request, so what was sent and what came
back is kept byte for byte, with the target's time at both ends when the sender had a clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.target.roles import ROLE_PLACEHOLDERS

__all__ = ["Exchange", "Observer"]

#: Headers curl sets from the connection itself, left out of a reproduction.
_TRANSPORT_HEADERS = frozenset({"host", "content-length", "accept-encoding", "connection"})
_INLINE_BODY_MAX = 4096


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
