"""The registry of conformance checks and the checks that judge every single response.

Why a registry: a check is a named function carrying the requirement ids it proves; the runner,
the reports, schemathesis and the tests all find it by that name, so a name is a stable public
identifier (a report line, a JUnit test case, the thing a mutated facade must be "caught by").

Three kinds of check:

* ``response``: ``fn(exchange) -> bool`` judges one observed response; it returns ``False`` when
  the response is not its business and raises ``CheckFailed`` when it is wrong. The runner applies
  every response check to every response it sees, scripted or fuzzed; the same functions judge
  schemathesis's responses too (``st_bridge``; ``st_checks`` registers them for ``st run``).
* ``scenario``: ``fn(context) -> None`` drives the target through a short script (auth,
  idempotency, pagination, the session lifecycle) and raises ``CheckFailed``, or ``Skipped`` when
  the target cannot be asked: a key that was not given (such a check declares the roles it
  ``needs``; ``time`` stands for a clock, ``admin`` for the simulator's admin API) or something
  the target could not provide (an avatar, a run, a free slot). ``order`` runs a check later:
  those that use up the create rate limit go last.
* ``fuzz``: schemathesis's own checks, reported under their schemathesis names.

Only the contract profile is held against the target (HAR-5): each check states a rule the seed
states, never one of the simulator's gap choices.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from harness.conformance.target import Exchange

if TYPE_CHECKING:
    from harness.conformance.context import Context

__all__ = [
    "CHECKS",
    "ENVELOPE_FIELDS",
    "ERROR_TYPES",
    "STATUS_TYPES",
    "Check",
    "CheckFailed",
    "Kind",
    "ResponseFunction",
    "ScenarioFunction",
    "Skipped",
    "envelope_of",
    "register_fuzz_check",
    "response_check",
    "response_checks",
    "scenario_check",
]

Kind = Literal["response", "scenario", "fuzz"]
ResponseFunction = Callable[[Exchange], bool]
ScenarioFunction = Callable[["Context"], None]


class CheckFailed(AssertionError):
    """A structured failure: what is wrong and, when one request shows it, that exchange."""

    def __init__(self, message: str, exchange: Exchange | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exchange = exchange


class Skipped(Exception):
    """The check could not be run against this target (the reason says why)."""


@dataclass(frozen=True)
class Check:
    """A registered check: its stable name, requirement ids, kind and the roles it needs."""

    name: str
    requirements: tuple[str, ...]
    kind: Kind
    description: str
    needs: tuple[str, ...] = ()
    response: ResponseFunction | None = None
    scenario: ScenarioFunction | None = None
    order: int = 0


#: Every check by name, in registration order (the order of the reports).
CHECKS: dict[str, Check] = {}


def _register(check: Check) -> None:
    existing = CHECKS.get(check.name)
    if existing is not None and existing != check:
        raise ValueError(f"a conformance check named {check.name!r} is already registered")
    CHECKS[check.name] = check


def _doc(function: Callable[..., Any]) -> str:
    return (function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else ""


def response_check(name: str, *requirements: str) -> Callable[[ResponseFunction], ResponseFunction]:
    """Register ``fn(exchange) -> bool`` as the response check ``name``."""

    def decorate(function: ResponseFunction) -> ResponseFunction:
        _register(Check(name, requirements, "response", _doc(function), response=function))
        return function

    return decorate


def scenario_check(
    name: str, *requirements: str, needs: tuple[str, ...] = (), order: int = 0
) -> Callable[[ScenarioFunction], ScenarioFunction]:
    """Register ``fn(context)`` as the scenario check ``name``, skipped without ``needs``."""

    def decorate(function: ScenarioFunction) -> ScenarioFunction:
        check = Check(
            name, requirements, "scenario", _doc(function), needs, scenario=function, order=order
        )
        _register(check)
        return function

    return decorate


def register_fuzz_check(name: str, requirements: tuple[str, ...], description: str) -> None:
    """Register one of schemathesis's own checks under its schemathesis name."""
    _register(Check(name, requirements, "fuzz", description))


def response_checks() -> list[Check]:
    return [check for check in CHECKS.values() if check.kind == "response"]


# -- the error envelope (ERR-1 .. ERR-4) ------------------------------------------------------

#: The envelope's fields, no more and no fewer (ERR-1).
ENVELOPE_FIELDS = frozenset({"type", "code", "message", "param", "request_id"})

#: The seed's error types and the statuses each maps to (ERR-2). ``quota_exceeded`` is a 429 in
#: the seed's table; a status the table does not name (402, 405, ...) may carry any listed type,
#: because the seed says the mapping is rough there.
STATUS_TYPES: dict[int, frozenset[str]] = {
    400: frozenset({"invalid_request"}),
    401: frozenset({"authentication"}),
    403: frozenset({"permission"}),
    404: frozenset({"not_found"}),
    409: frozenset({"conflict"}),
    422: frozenset({"unprocessable"}),
    429: frozenset({"rate_limit", "quota_exceeded"}),
    500: frozenset({"internal"}),
    503: frozenset({"service_unavailable"}),
}
ERROR_TYPES = frozenset().union(*STATUS_TYPES.values())

_CODE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?:\.[a-z][a-z0-9]*(?:_[a-z0-9]+)*)*$")


def _is_error(exchange: Exchange) -> bool:
    return not 200 <= exchange.status < 300


def envelope_of(exchange: Exchange) -> dict[str, Any] | None:
    """The ``error`` object of a well-formed envelope, else ``None``."""
    body = exchange.json()
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"]  # type: ignore[no-any-return]
    return None


@response_check("error_envelope_closed", "ERR-1")
def error_envelope_closed(exchange: Exchange) -> bool:
    """Every non-2xx answer is exactly {error:{type, code, message, param, request_id}}."""
    if not _is_error(exchange):
        return False
    body = exchange.json()
    if not isinstance(body, dict) or set(body) != {"error"} or not isinstance(body["error"], dict):
        raise CheckFailed(
            f"{exchange.status} body is not the error envelope: {exchange.body[:300]!r}", exchange
        )
    error = body["error"]
    if set(error) != ENVELOPE_FIELDS:
        extra = sorted(set(error) - ENVELOPE_FIELDS)
        missing = sorted(ENVELOPE_FIELDS - set(error))
        raise CheckFailed(
            f"error envelope fields differ from the contract: extra {extra}, missing {missing}",
            exchange,
        )
    for name in ("type", "code", "message", "request_id"):
        if not isinstance(error[name], str):
            raise CheckFailed(f"error.{name} is not a string: {error[name]!r}", exchange)
    if error["param"] is not None and not isinstance(error["param"], str):
        raise CheckFailed(f"error.param is neither a string nor null: {error['param']!r}", exchange)
    return True


@response_check("error_type_matches_status", "ERR-2")
def error_type_matches_status(exchange: Exchange) -> bool:
    """error.type is one of the seed's types and matches the HTTP status."""
    error = envelope_of(exchange) if _is_error(exchange) else None
    if error is None:
        return False
    kind = error.get("type")
    if kind not in ERROR_TYPES:
        raise CheckFailed(f"error.type {kind!r} is not one of the contract's types", exchange)
    allowed = STATUS_TYPES.get(exchange.status)
    if allowed is not None and kind not in allowed:
        raise CheckFailed(
            f"status {exchange.status} carries error.type {kind!r}; expected {sorted(allowed)}",
            exchange,
        )
    return True


@response_check("request_id_echoed", "ERR-3")
def request_id_echoed(exchange: Exchange) -> bool:
    """Every response has a req_ X-Request-Id, and an error's request_id echoes it."""
    header = exchange.headers.get("x-request-id")
    if header is None:
        raise CheckFailed("the response has no X-Request-Id header", exchange)
    if not header.startswith("req_"):
        raise CheckFailed(f"X-Request-Id {header!r} is not a req_ id", exchange)
    error = envelope_of(exchange) if _is_error(exchange) else None
    if error is not None and error.get("request_id") != header:
        raise CheckFailed(
            f"error.request_id {error.get('request_id')!r} differs from X-Request-Id {header!r}",
            exchange,
        )
    return True


@response_check("error_code_format", "ERR-4")
def error_code_format(exchange: Exchange) -> bool:
    """error.code is lower_snake_case, dot-separated segments allowed; param a string or null."""
    error = envelope_of(exchange) if _is_error(exchange) else None
    if error is None:
        return False
    code = error.get("code")
    if not isinstance(code, str) or not _CODE.match(code):
        raise CheckFailed(f"error.code {code!r} is not lower_snake_case (dots allowed)", exchange)
    param = error.get("param")
    if param is not None and not isinstance(param, str):
        raise CheckFailed(f"error.param {param!r} is neither a field path nor null", exchange)
    return True


# -- limits (LIM-4) ----------------------------------------------------------------------------

_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def _is_session_create(exchange: Exchange) -> bool:
    return exchange.method == "POST" and exchange.path.rstrip("/") == "/v1/sessions"


@response_check("rate_limit_headers", "LIM-4")
def rate_limit_headers(exchange: Exchange) -> bool:
    """POST /v1/sessions (the seed's rate-limited operation) answers X-RateLimit-* when it
    succeeds or is refused by the rate limit."""
    if not _is_session_create(exchange):
        return False
    error = envelope_of(exchange)
    limited = exchange.status == 429 and error is not None and error.get("type") == "rate_limit"
    if not (200 <= exchange.status < 300 or limited):
        return False
    values: dict[str, int] = {}
    for name in _RATE_HEADERS:
        raw = exchange.headers.get(name)
        if raw is None:
            raise CheckFailed(f"a rate-limited response lacks the {name} header", exchange)
        try:
            values[name] = int(raw)
        except ValueError:
            raise CheckFailed(f"{name} is not an integer: {raw!r}", exchange) from None
        if values[name] < 0:
            raise CheckFailed(f"{name} is negative: {raw!r}", exchange)
    if values["x-ratelimit-remaining"] > values["x-ratelimit-limit"]:
        raise CheckFailed("X-RateLimit-Remaining exceeds X-RateLimit-Limit", exchange)
    return True


@response_check("retry_after_present", "LIM-4")
def retry_after_present(exchange: Exchange) -> bool:
    """Every 429 and every 503 carries Retry-After (seconds or an HTTP date)."""
    if exchange.status not in (429, 503):
        return False
    raw = exchange.headers.get("retry-after")
    if raw is None:
        raise CheckFailed(f"a {exchange.status} lacks the Retry-After header", exchange)
    if not raw.strip().isdigit() and "GMT" not in raw:
        raise CheckFailed(f"Retry-After {raw!r} is neither seconds nor an HTTP date", exchange)
    return True
