"""Response checks about resources: their shapes, ids, timestamps, bodies and hidden fields.

Each applies to every response the run observes (scripted or fuzzed) and judges only what the
seed states. Which resource a body holds is known from the operation it answers (found in the
contract profile, ``harness.conformance.operations``), never from a field a deployment may leave
out (a run's ``object`` is optional).

The shape checks validate a success body against the profile's schema for its operation: one
check per resource, so a report says which resource is wrong and each rule has its own name.
"""

from __future__ import annotations

import contextvars
import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.conformance.checks import CheckFailed, response_check
from harness.conformance.operations import Operation, body_problem, operation_of
from harness.conformance.target import Exchange

__all__ = [
    "RESOURCES",
    "SHAPES",
    "Shape",
    "resources_in",
    "utc_instant",
    "write_only_values",
]

#: Where each operation's answer holds its resources: the body itself, or its ``data`` list,
#: or a member (``session`` of a pipecat answer); and which resource kind it is.
RESOURCES: Mapping[str, tuple[str, str]] = {
    "createSession": ("session", "body"),
    "retrieveSession": ("session", "body"),
    "endSession": ("session", "body"),
    "listSessions": ("session", "data"),
    "createPipecatSession": ("session", "session"),
    "createAvatar": ("avatar", "body"),
    "retrieveAvatar": ("avatar", "body"),
    "listAvatars": ("avatar", "data"),
    "createRun": ("run", "body"),
    "retrieveRun": ("run", "body"),
    "listRuns": ("run", "data"),
    "getRunStatus": ("run.status", "body"),
    "listRunEvents": ("run.event", "data"),
    "deleteRun": ("run.deletion", "body"),
    "listAssets": ("asset", "data"),
    "listModels": ("model", "data"),
}

_ULID = r"[0-9A-HJKMNP-TV-Z]{26}"

#: The seed's id conventions (CONV-1), per resource kind: field name -> pattern.
ID_RULES: Mapping[str, Mapping[str, str]] = {
    "session": {"id": rf"^sess_{_ULID}$", "avatar_id": r"^av_"},
    "avatar": {"id": r"^av_"},
    "run": {"id": r"^run_"},
    "run.status": {"id": r"^run_"},
    "run.deletion": {"run_id": r"^run_"},
    "asset": {"id": r"^asset_"},
    "model": {"id": r"^[^/]+/[^/]+$"},
}


def _success(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


def resources_in(operation_id: str, body: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(kind, resource)`` for every resource of ``operation_id``'s answer ``body``."""
    kind_where = RESOURCES.get(operation_id)
    if kind_where is None or not isinstance(body, dict):
        return
    kind, where = kind_where
    if where == "body":
        items: list[Any] = [body]
    elif where == "data":
        data = body.get("data")
        items = data if isinstance(data, list) else []
    else:
        items = [body.get(where)]
    for item in items:
        if isinstance(item, dict):
            yield kind, item


def _judged(exchange: Exchange) -> tuple[Operation, Any] | None:
    """The operation and JSON body of a success answer of the contract, else ``None``."""
    if not _success(exchange):
        return None
    operation = operation_of(exchange)
    if operation is None:
        return None
    return operation, exchange.json()


# -- CONV-1: ids ---------------------------------------------------------------------------------


@response_check("ids_prefixed", "CONV-1")
def ids_prefixed(exchange: Exchange) -> bool:
    """Resource ids carry the seed's prefixes (sessions sess_ + ULID); model ids are
    <publisher>/<model>; output items name asset_ ids."""
    judged = _judged(exchange)
    if judged is None:
        return False
    operation, body = judged
    seen = False
    for kind, resource in resources_in(operation.operation_id, body):
        for name, pattern in ID_RULES.get(kind, {}).items():
            if name not in resource:
                continue
            seen = True
            value = resource[name]
            if not isinstance(value, str) or not re.match(pattern, value):
                raise CheckFailed(f"{kind}.{name} {value!r} does not match {pattern}", exchange)
        for output in resource.get("outputs") or [] if kind == "run" else []:
            asset = output.get("asset_id") if isinstance(output, dict) else None
            if asset is not None and not (isinstance(asset, str) and asset.startswith("asset_")):
                raise CheckFailed(f"an output's asset_id {asset!r} is not an asset_ id", exchange)
    return seen


# -- CONV-2: timestamps --------------------------------------------------------------------------

#: The timestamp fields the seed names, wherever they occur in a resource.
TIMESTAMP_FIELDS = frozenset(
    {
        "created_at",
        "started_at",
        "first_frame_at",
        "completed_at",
        "deleted_at",
        "requested_at",
        "deadline_at",
        "period_start",
        "period_end",
        "current_period_start",
        "current_period_end",
    }
)
#: Free-form objects whose inner keys are the customer's or not shown by the seed.
_FREE_FORM = frozenset(
    {"metadata", "input", "request_schemas", "operations", "pricing", "output_quality_descriptions"}
)
_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]00:?00)$")


def _timestamps(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key in TIMESTAMP_FIELDS:
                yield where, value
            elif key in _FREE_FORM or (key == "data" and isinstance(value, dict)):
                continue  # a run event's data and a customer's metadata are free-form
            else:
                yield from _timestamps(value, where)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _timestamps(value, f"{path}[{index}]")


def utc_instant(value: Any) -> datetime | None:
    """The instant an ISO-8601 UTC timestamp names, or ``None`` when ``value`` is not one.

    Why instants: two spellings of the seed's format (``…:00Z``, ``…:00.000Z``, ``…+00:00``) do
    not sort as strings, so order is judged on the parsed times."""
    if not isinstance(value, str) or not _ISO_UTC.match(value):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def is_iso_utc(value: str) -> bool:
    return utc_instant(value) is not None


@response_check("timestamps_utc", "CONV-2")
def timestamps_utc(exchange: Exchange) -> bool:
    """Every timestamp an answer carries is an ISO-8601 UTC string (null where unset)."""
    judged = _judged(exchange)
    if judged is None:
        return False
    seen = False
    for where, value in _timestamps(judged[1]):
        seen = True
        if value is None:
            continue
        if not isinstance(value, str) or not is_iso_utc(value):
            raise CheckFailed(f"{where} {value!r} is not an ISO-8601 UTC timestamp", exchange)
    return seen


# -- CONV-3: JSON bodies -------------------------------------------------------------------------

_JSON_MEDIA = re.compile(r"^application/([a-z0-9.+-]*\+)?json\s*(;|$)", re.IGNORECASE)


@response_check("json_bodies", "CONV-3")
def json_bodies(exchange: Exchange) -> bool:
    """Every answer of the API is a JSON body with a JSON content type (asset content, whose
    shape the seed leaves open, aside)."""
    operation = operation_of(exchange)
    if operation is None or (operation.operation_id == "getAssetContent" and _success(exchange)):
        return False
    content_type = exchange.headers.get("content-type", "")
    if not _JSON_MEDIA.match(content_type):
        raise CheckFailed(f"a {exchange.status} answered Content-Type {content_type!r}", exchange)
    if exchange.json() is None:
        raise CheckFailed(
            f"a {exchange.status} body is not JSON: {exchange.body[:200]!r}", exchange
        )
    return True


# -- RES-SESS-2: write-only fields ---------------------------------------------------------------

_WRITE_ONLY: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "write_only", default=frozenset()
)
_MIN_SECRET = 8
#: The harness's own worker token (``Context``'s default transport), always a secret.
DEFAULT_WORKER_TOKEN = "conformance-worker-token-7f3a9c"


@contextmanager
def write_only_values(values: frozenset[str]) -> Iterator[None]:
    """Within this block, answers must not contain these values either (the run's tokens)."""
    token = _WRITE_ONLY.set(frozenset(v for v in values if len(v) >= _MIN_SECRET))
    try:
        yield
    finally:
        _WRITE_ONLY.reset(token)


def _walk(node: Any) -> Iterator[tuple[str | None, Any]]:
    """Every ``(key, value)`` of a JSON document (``None`` keys for list items)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key), value
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield None, value
            yield from _walk(value)


@response_check("worker_token_hidden", "RES-SESS-2")
def worker_token_hidden(exchange: Exchange) -> bool:
    """No answer, list or event carries transport.worker_token, by name or (for the tokens
    this run sent) as a value."""
    operation = operation_of(exchange)
    if operation is None:
        return False
    secrets = _WRITE_ONLY.get() | {DEFAULT_WORKER_TOKEN}
    for key, value in _walk(exchange.json()):
        if key == "worker_token":
            raise CheckFailed("an answer carries a worker_token field", exchange)
        if isinstance(value, str) and value in secrets:
            raise CheckFailed(f"an answer carries the worker_token value under {key!r}", exchange)
    # The rule is exercised where a transport could leak: an answer that holds a session.
    body = exchange.json() if _success(exchange) else None
    return any(kind == "session" for kind, _ in resources_in(operation.operation_id, body))


# -- resource shapes (RES-*) ---------------------------------------------------------------------

Extra = Callable[[Any], str | None]


def _events_in_order(body: Any) -> str | None:
    data = body.get("data") if isinstance(body, dict) else None
    sequences = [e.get("sequence") for e in data or [] if isinstance(e, dict)]
    numbers = [s for s in sequences if isinstance(s, int)]
    if len(numbers) == len(sequences) and numbers != sorted(numbers):
        return f"run events are not in sequence order: {sequences[:10]}"
    return None


def _by_model_within_total(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("by_model"), dict):
        return None
    values = [v for v in body["by_model"].values() if isinstance(v, int | float)]
    total = body.get("credits_charged")
    if isinstance(total, int | float) and sum(values) > total:
        return f"by_model sums to {sum(values)}, more than credits_charged {total}"
    return None


@dataclass(frozen=True, slots=True)
class Shape:
    """A resource whose answers must match the profile, and the operations that answer it."""

    check: str
    requirements: tuple[str, ...]
    operations: tuple[str, ...]
    description: str
    extra: Extra | None = None


SHAPES: tuple[Shape, ...] = (
    Shape("session_shape", ("RES-SESS-1",),
          ("createSession", "listSessions", "retrieveSession", "endSession"),
          "A session has the seed's fields with their types (those set later may be absent "
          "until then); object is session."),
    Shape("avatar_shape", ("RES-AV-1",), ("createAvatar", "listAvatars", "retrieveAvatar"),
          "An avatar has id, object, name, status, is_demo, runtime_type, created_at."),
    Shape("run_shape", ("RES-RUN-1", "RES-RUN-3"), ("createRun", "listRuns", "retrieveRun"),
          "A run has its always-present fields; outputs and file objects have theirs."),
    Shape("run_status_shape", ("RES-RUN-5",), ("getRunStatus",),
          "A run status has id, status, progress and error."),
    Shape("run_event_shape", ("RES-RUN-4",), ("listRunEvents",),
          "Run events have id, integer sequence, type, part_id, data, created_at, in order.",
          _events_in_order),
    Shape("run_deletion_shape", ("RES-RUN-6",), ("deleteRun",),
          "A run deletion has id, run_id, status, requested_at and nullable times and error."),
    Shape("asset_shape", ("RES-ASSET-1",), ("listAssets",),
          "An asset has the seed's fields, of the implied types (those that do not apply may "
          "be absent)."),
    Shape("model_shape", ("RES-MODEL-1",), ("listModels",),
          "A model has every always-present catalog field with its type."),
    Shape("usage_shape", ("RES-USAGE-1", "RES-USAGE-2"), ("getUsage",),
          "The usage summary has its totals, window and slices; by_model stays within the total.",
          _by_model_within_total),
    Shape("quota_shape", ("RES-QUOTA-1",), ("getQuota",),
          "The quota has non-negative integer balances, can_start_session, period, plan, status."),
    Shape("pipecat_shape", ("RES-PIPE-1",), ("createPipecatSession",),
          "A pipecat answer is {object: pipecat.session, relay, session} with the relay's fields."),
)  # fmt: skip


def _register_shape(shape: Shape) -> None:
    def judge(exchange: Exchange) -> bool:
        judged = _judged(exchange)
        if judged is None or judged[0].operation_id not in shape.operations:
            return False
        operation, body = judged
        if body is None:
            raise CheckFailed(f"{operation.operation_id} answered no JSON body", exchange)
        problem = body_problem(operation, body)
        if problem is None and shape.extra is not None:
            problem = shape.extra(body)
        if problem is not None:
            raise CheckFailed(f"{operation.operation_id}: {problem}", exchange)
        # An empty page shows no resource: the check applied only if one was there to judge.
        return operation.operation_id not in RESOURCES or any(
            True for _ in resources_in(operation.operation_id, body)
        )

    judge.__doc__ = shape.description
    judge.__name__ = shape.check
    response_check(shape.check, *shape.requirements)(judge)


for _shape in SHAPES:
    _register_shape(_shape)


# -- integers the seed calls integers ----------------------------------------------------------

#: Where the seed says a field is an integer: by resource kind, the dot paths.
INTEGER_FIELDS: Mapping[str, tuple[str, ...]] = {
    "session": ("idle_timeout_seconds", "max_duration_seconds", "usage.billable_seconds",
                "usage.frames"),
    "run.event": ("sequence",),
    "asset": ("byte_size", "duration_ms", "height", "width"),
}  # fmt: skip
_BODY_INTEGERS: Mapping[str, tuple[str, ...]] = {
    "getQuota": ("balance_credits", "included_balance_credits", "included_credits_limit",
                 "included_credits_used", "rollover_balance_credits",
                 "low_balance_threshold_credits"),
    "getUsage": ("billable_seconds", "sessions", "credits_charged"),
}  # fmt: skip


class _Decimal(float):
    """A JSON number written with a fraction or an exponent (``1.0``, ``1e3``)."""


def _at(node: Any, path: str) -> Any:
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


@response_check("integers_exact", "RES-SESS-1", "RES-QUOTA-1", "RES-USAGE-1", "RES-RUN-4")
def integers_exact(exchange: Exchange) -> bool:
    """Fields the seed calls integers are written as JSON integers (``30``, not ``30.0``):
    a session's timeouts and usage, quota balances, usage totals, event sequences, asset
    sizes."""
    judged = _judged(exchange)
    if judged is None:
        return False
    operation = judged[0]
    try:
        body = json.loads(exchange.body, parse_float=_Decimal)
    except ValueError:
        return False
    places = [(operation.operation_id, body, _BODY_INTEGERS.get(operation.operation_id, ()))]
    places += [
        (kind, resource, INTEGER_FIELDS.get(kind, ()))
        for kind, resource in resources_in(operation.operation_id, body)
    ]
    seen = False
    for kind, node, paths in places:
        for path in paths:
            value = _at(node, path)
            seen = seen or value is not None
            if isinstance(value, _Decimal):
                raise CheckFailed(f"{kind} {path} is {value!r} written as a decimal, not an "
                                  "integer", exchange)  # fmt: skip
    return seen
