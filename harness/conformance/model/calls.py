"""One observed exchange read as a call of the contract: its operation, path ids, query, body
and the key that sent it.

Why one reading: every rule of the model asks the same questions of an exchange (which operation,
which resource id, which key, which body), and a deployment's answer is judged by what was asked.
Operations are found in the contract profile (``harness.conformance.operations``), so the model
never guesses from a field a deployment may leave out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from harness.conformance.checks import envelope_of
from harness.conformance.operations import operation_params
from harness.conformance.target import Exchange

__all__ = ["Call", "call_of"]


@dataclass(frozen=True, slots=True)
class Call:
    """What an exchange asked, and the few facts of its answer every rule reads."""

    exchange: Exchange
    operation: str
    params: dict[str, str]
    query: dict[str, str]
    authorization: str | None
    body: Any
    idempotency_key: str | None

    @property
    def status(self) -> int:
        return self.exchange.status

    @property
    def ok(self) -> bool:
        return 200 <= self.exchange.status < 300

    @property
    def answer(self) -> Any:
        return self.exchange.json()

    @property
    def error(self) -> dict[str, Any] | None:
        return None if self.ok else envelope_of(self.exchange)

    @property
    def code(self) -> str | None:
        error = self.error
        value = None if error is None else error.get("code")
        return value if isinstance(value, str) else None

    @property
    def error_type(self) -> str | None:
        error = self.error
        value = None if error is None else error.get("type")
        return value if isinstance(value, str) else None

    @property
    def param(self) -> str | None:
        error = self.error
        value = None if error is None else error.get("param")
        return value if isinstance(value, str) else None

    def limit(self) -> int | None:
        """The ``limit`` query parameter as an integer, if it is one."""
        raw = self.query.get("limit")
        try:
            return int(raw) if raw is not None else None
        except ValueError:
            return None


def _body(exchange: Exchange) -> Any:
    if not exchange.request_body:
        return None
    content_type = next(
        (v for k, v in exchange.request_headers.items() if k.lower() == "content-type"), ""
    )
    if "json" not in content_type.lower():
        return None
    try:
        return json.loads(exchange.request_body)
    except ValueError:
        return _UNREADABLE


#: A request body that was sent as JSON but is not JSON.
_UNREADABLE = object()


def _header(exchange: Exchange, name: str) -> str | None:
    return next((v for k, v in exchange.request_headers.items() if k.lower() == name), None)


def call_of(exchange: Exchange) -> Call | None:
    """The contract call ``exchange`` made, or ``None`` when it is outside the contract."""
    found = operation_params(exchange)
    if found is None:
        return None
    operation, params = found
    query = {k: v[-1] for k, v in parse_qs(urlsplit(exchange.url).query, True).items()}
    return Call(
        exchange=exchange,
        operation=operation,
        params={k: unquote(v) for k, v in params.items()},
        query=query,
        authorization=_header(exchange, "authorization"),
        body=_body(exchange),
        idempotency_key=_header(exchange, "idempotency-key"),
    )


def unreadable(body: Any) -> bool:
    """Whether a JSON request body could not be parsed."""
    return body is _UNREADABLE
