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
  idempotency, pagination, the session lifecycle) and raises ``CheckFailed``. A check that could
  not exercise its rule says why: ``Incomplete`` when the user can let it (a key, a run body, more
  time: its ``flag`` names how; such a run exits 3), ``NotApplicable`` when nothing the user can
  give would (the simulator's admin API against a deployment). A check declares the roles it
  ``needs``, how many sessions it ``creates`` and with which ``key``, and the target seconds it may
  spend waiting (``budget``), so the runner can pace creates under the seed's rate limit and
  end every check in time. ``order`` runs a check later among those ready to run.
* ``fuzz``: schemathesis's own checks, reported under their schemathesis names.

Only the contract profile is held against the target (HAR-5): each check states a rule the seed
states, never one of the simulator's gap choices.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Literal, get_args

from harness.conformance.target import Exchange
from sim.errors import ErrorType

if TYPE_CHECKING:
    from harness.conformance.context import Context

__all__ = [
    "CHECKS",
    "DEFAULT_BUDGET_SECONDS",
    "ENVELOPE_FIELDS",
    "ERROR_TYPES",
    "LATE",
    "STATUS_TYPES",
    "BeyondTime",
    "Check",
    "CheckFailed",
    "Incomplete",
    "KeyChoice",
    "Kind",
    "NotApplicable",
    "NotChecked",
    "ResponseFunction",
    "ScenarioFunction",
    "envelope_of",
    "is_rate_limited",
    "register_fuzz_check",
    "response_check",
    "response_checks",
    "scenario_check",
]

Kind = Literal["response", "scenario", "fuzz", "model"]
ResponseFunction = Callable[[Exchange], bool]
ScenarioFunction = Callable[["Context"], None]


class CheckFailed(AssertionError):
    """A structured failure: what is wrong and, when one request shows it, that exchange."""

    def __init__(self, message: str, exchange: Exchange | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exchange = exchange


class NotChecked(Exception):
    """The check could not exercise the rule it states; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Incomplete(NotChecked):
    """Something the user can give would let the check run: ``flag`` names it (``--model``,
    ``--other-org-key``, a longer ``--max-wait``, no ``--quick``). A run that leaves a check
    incomplete exits 3 unless ``--allow-incomplete``."""

    def __init__(self, reason: str, flag: str | None = None) -> None:
        super().__init__(reason)
        self.flag = flag


class NotApplicable(NotChecked):
    """Nothing the user can give would let the check run against this target (for example the
    simulator's admin API, which no deployment has)."""


class BeyondTime(NotChecked):
    """What no bounded run reaches (the 24-hour idempotency window): reported, never a reason
    to exit 3. ``how`` says what would reach it (``--max-wait 86402``, the admin clock)."""

    def __init__(self, reason: str, how: str) -> None:
        super().__init__(reason)
        self.how = how


#: The role whose key a check creates its sessions with: one named role, or ``any`` (the
#: runner lends whichever of the API key and the other organization's key can create soonest).
KeyChoice = Literal["api", "other_org", "any"]

#: A check of this order or more starts only once every check of a lower order has run: a
#: fitting, a run's events or a long window have had time to happen by then.
LATE = 100

#: Target seconds a scenario check may spend waiting by default (timers, drains, polls), beyond
#: the pacing of its creates under the rate limit.
DEFAULT_BUDGET_SECONDS = 60.0


@dataclass(frozen=True)
class Check:
    """A registered check: its stable name, requirement ids, kind, the roles it needs and, for a
    scenario, how it spends the target's limits and time (``creates`` sessions with ``key``,
    ``budget`` target seconds of waiting, ``quiet`` when its key must have made no create for a
    whole rate window first)."""

    name: str
    requirements: tuple[str, ...]
    kind: Kind
    description: str
    needs: tuple[str, ...] = ()
    response: ResponseFunction | None = None
    scenario: ScenarioFunction | None = None
    order: int = 0
    creates: int = 0
    key: KeyChoice = "api"
    budget: float = DEFAULT_BUDGET_SECONDS
    quiet: bool = False
    opportunistic: bool = False
    #: For a model rule: the condition under which it can fail at its edge (a page size above
    #: the maximum on a list holding more than the maximum...); a rule exercised only short of
    #: it is reported as ``partly``.
    edge: str | None = None


#: Every check by name, in registration order (the order of the reports).
CHECKS: dict[str, Check] = {}


def _register(check: Check) -> None:
    existing = CHECKS.get(check.name)
    if existing is not None and existing != check:
        raise ValueError(f"a conformance check named {check.name!r} is already registered")
    CHECKS[check.name] = check


def _doc(function: Callable[..., Any]) -> str:
    return (function.__doc__ or "").strip().splitlines()[0] if function.__doc__ else ""


def response_check(
    name: str, *requirements: str, opportunistic: bool = False
) -> Callable[[ResponseFunction], ResponseFunction]:
    """Register ``fn(exchange) -> bool`` as the response check ``name``. An ``opportunistic``
    one judges what a run may or may not meet (a session the start-up timeout failed): when it
    meets none, the check is not applicable rather than incomplete."""

    def decorate(function: ResponseFunction) -> ResponseFunction:
        check = Check(
            name, requirements, "response", _doc(function), response=function,
            opportunistic=opportunistic,
        )  # fmt: skip
        _register(check)
        return function

    return decorate


def scenario_check(
    name: str,
    *requirements: str,
    needs: tuple[str, ...] = (),
    order: int = 0,
    creates: int = 0,
    key: KeyChoice = "api",
    budget: float = DEFAULT_BUDGET_SECONDS,
    quiet: bool = False,
) -> Callable[[ScenarioFunction], ScenarioFunction]:
    """Register ``fn(context)`` as the scenario check ``name`` (not run without ``needs``)."""

    def decorate(function: ScenarioFunction) -> ScenarioFunction:
        check = Check(
            name,
            requirements,
            "scenario",
            _doc(function),
            needs,
            scenario=function,
            order=order,
            creates=creates,
            key=key,
            budget=budget,
            quiet=quiet,
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

#: The seed's error types (ERR-2), as the domain declares them once.
ERROR_TYPES = frozenset(get_args(ErrorType))
#: Each status and the types the seed pairs it with (ERR-2): its list of types, read in order
#: against the statuses, "maps roughly": 400 invalid_request, 401 authentication, 403
#: permission, 404 not_found, 409 conflict, 429 rate_limit or quota_exceeded, 500 internal,
#: 503 service_unavailable. Where the seed's table leaves the type open (402, 422) any of its
#: types may appear.
STATUS_TYPES: dict[int, frozenset[str]] = {
    400: frozenset({"invalid_request"}),
    401: frozenset({"authentication"}),
    403: frozenset({"permission"}),
    404: frozenset({"not_found"}),
    409: frozenset({"conflict"}),
    429: frozenset({"rate_limit", "quota_exceeded"}),
    500: frozenset({"internal"}),
    503: frozenset({"service_unavailable"}),
}

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
    """error.type is one of the seed's types, the one its status maps to (400
    invalid_request, 401 authentication, 403 permission, 404 not_found, 409 conflict, 429
    rate_limit or quota_exceeded, 500 internal, 503 service_unavailable)."""
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
    """An error's request_id echoes the response's X-Request-Id, a req_ id (a success may carry
    the header too, and then it is a req_ id)."""
    header = exchange.headers.get("x-request-id")
    error = envelope_of(exchange) if _is_error(exchange) else None
    if error is None:
        if header is not None and not header.startswith("req_"):
            raise CheckFailed(f"X-Request-Id {header!r} is not a req_ id", exchange)
        return False
    if header is None:
        raise CheckFailed("an error response has no X-Request-Id header to echo", exchange)
    if not header.startswith("req_"):
        raise CheckFailed(f"X-Request-Id {header!r} is not a req_ id", exchange)
    if error.get("request_id") != header:
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
_LEADING_INTEGER = re.compile(r"^\s*(\d+)\s*(?:[;,].*)?$")


def _is_session_create(exchange: Exchange) -> bool:
    return exchange.method == "POST" and exchange.path.rstrip("/") == "/v1/sessions"


def is_rate_limited(exchange: Exchange) -> bool:
    """A 429 whose envelope says ``rate_limit`` (the seed's rate limit or queue capacity)."""
    error = envelope_of(exchange) if exchange.status == 429 else None
    return error is not None and error.get("type") == "rate_limit"


def _reset_is_valid(raw: str) -> bool:
    """``X-RateLimit-Reset`` in any standard form: seconds from now, Unix seconds, HTTP date."""
    if _LEADING_INTEGER.match(raw):
        return True
    try:
        parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return False
    return True


@response_check("rate_limit_headers", "LIM-4")
def rate_limit_headers(exchange: Exchange) -> bool:
    """A create refused by the rate limit carries X-RateLimit-Limit, -Remaining and -Reset; a
    create that succeeds may carry them too (the seed allows either reading), and then they are
    well-formed."""
    if not _is_session_create(exchange):
        return False
    limited = is_rate_limited(exchange)
    present = [name for name in _RATE_HEADERS if name in exchange.headers]
    if not limited and not (200 <= exchange.status < 300 and present):
        return False
    values: dict[str, int] = {}
    for name in _RATE_HEADERS:
        raw = exchange.headers.get(name)
        if raw is None:
            raise CheckFailed(
                f"a {'refused' if limited else 'successful'} create carries "
                f"{', '.join(present) or 'no X-RateLimit header'} but not {name}",
                exchange,
            )
        if name == "x-ratelimit-reset":
            if not _reset_is_valid(raw):
                raise CheckFailed(f"{name} is neither seconds nor a date: {raw!r}", exchange)
            continue
        matched = _LEADING_INTEGER.match(raw)
        if matched is None:
            raise CheckFailed(f"{name} is not a count: {raw!r}", exchange)
        values[name] = int(matched.group(1))
    if values["x-ratelimit-remaining"] > values["x-ratelimit-limit"]:
        raise CheckFailed("X-RateLimit-Remaining exceeds X-RateLimit-Limit", exchange)
    return limited


@response_check("retry_after_present", "LIM-4")
def retry_after_present(exchange: Exchange) -> bool:
    """Where the seed names Retry-After (every 429, a 503 at_capacity) it is there, as seconds
    or an HTTP date; wherever it appears it has that form."""
    raw = exchange.headers.get("retry-after")
    error = envelope_of(exchange) if _is_error(exchange) else None
    named = (exchange.status == 429 and error is not None) or (
        exchange.status == 503 and error is not None and error.get("code") == "at_capacity"
    )
    if raw is None:
        if named:
            raise CheckFailed(f"a {exchange.status} lacks the Retry-After header", exchange)
        return False
    if not raw.strip().isdigit():
        try:
            parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            raise CheckFailed(
                f"Retry-After {raw!r} is neither seconds nor an HTTP date", exchange
            ) from None
    return named
