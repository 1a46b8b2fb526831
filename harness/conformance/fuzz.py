"""Schemathesis fuzzing of a target against the contract profile, through the target's seam.

Why generate with schemathesis but send with the ``Target``: schemathesis's engine picks its own
transport (``requests`` for a URL, its own client for an app), so it would have to know which kind
of target it has. Here schemathesis only generates cases (every operation of the profile, positive
and negative data, ``max_examples`` each, seeded) and judges answers; each case is sent through
``Target.send`` like every other request of the harness, then validated with schemathesis's
response checks and the harness's own (in schemathesis's signature, ``st_bridge``).

Built-in checks not run (they re-send requests through schemathesis's transport, bypassing the
seam, or need its stateful recorder): ``ignored_auth`` (the ``unauthenticated_rejected`` and
``revoked_key_rejected`` checks cover it), ``use_after_free``, ``ensure_resource_availability``,
``object_level_authorization`` (``tenant_isolation`` covers it), ``unsupported_method``,
``missing_required_header`` and ``allow_header_conformance`` (coverage-phase probes only).

Positive data may be refused by rules a schema cannot state (a cursor naming no item, a usage
window, an image's content, credits), so ``positive_data_acceptance`` accepts any answer the
contract lists for a refusal; ``not_a_server_error`` still fails every 5xx but the seed's 503.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import CHECKS as ST_CHECKS
from schemathesis.checks import load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.core.transport import Response
from schemathesis.generation.modes import GenerationMode

from harness.conformance.checks import register_fuzz_check
from harness.conformance.operations import form_is_valid_as_sent, load_profile
from harness.conformance.st_bridge import SCHEMATHESIS_CHECKS, counting
from harness.conformance.target import Exchange, Target, TargetUnreachable

__all__ = ["BUILTIN_CHECKS", "FuzzFailure", "FuzzResult", "fuzz"]

#: Schemathesis's checks the harness runs, each proving what HAR-2 asks of the fuzz.
BUILTIN_CHECKS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("not_a_server_error", ("HAR-2",), "no 5xx other than a 503 the contract names"),
    ("status_code_conformance", ("HAR-2", "HAR-5"), "every status is one the profile lists"),
    ("content_type_conformance", ("HAR-2",), "every content type is one the profile lists"),
    ("response_headers_conformance", ("HAR-2", "LIM-4"), "documented headers are present"),
    ("response_schema_conformance", ("HAR-2", "HAR-5"), "every body matches the profile"),
    ("negative_data_rejection", ("HAR-2",), "schema-invalid requests are refused"),
    ("positive_data_acceptance", ("HAR-2",), "schema-valid requests are not refused as invalid"),
)
for _name, _reqs, _description in BUILTIN_CHECKS:
    register_fuzz_check(_name, _reqs, _description)

_ACCEPTED = ["2xx", "400", "401", "402", "403", "404", "409", "422", "429", "503"]
_CREATES = {("POST", "/v1/sessions"), ("POST", "/v1/pipecat/sessions")}


@dataclass(frozen=True)
class FuzzFailure:
    check: str
    operation: str
    message: str
    exchange: Exchange


@dataclass
class FuzzResult:
    """Cases sent, checks applied, and failures (a few per check and operation)."""

    cases: int = 0
    applied: dict[str, int] = field(default_factory=dict)
    failures: list[FuzzFailure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _schema(seed: int, api_key: str) -> Any:
    # The key goes in as the bearer scheme's credential, so negative cases may drop it.
    config = SchemathesisConfig.from_dict(
        {
            "seed": seed,
            "auth": {"openapi": {"bearerAuth": {"bearer": api_key}}},
            "checks": {"positive_data_acceptance": {"expected-statuses": _ACCEPTED}},
        }
    )
    return schemathesis.openapi.from_dict(copy.deepcopy(dict(load_profile())), config=config)


def _request(target: Target, case: Any) -> httpx.Request:
    kwargs = case.as_transport_kwargs(base_url=target.base_url)
    headers = dict(kwargs.get("headers") or {})
    data = kwargs.get("data")
    content: bytes | None = None
    form: Any = None
    if isinstance(data, str):
        content = data.encode()
    elif isinstance(data, bytes):
        content = data
    else:
        form = data
    return target.client.build_request(
        str(kwargs["method"]),
        str(kwargs["url"]),
        headers=headers,
        params=kwargs.get("params") or None,
        json=kwargs.get("json"),
        data=form,
        files=_files(kwargs.get("files")),
        content=content,
    )


def _part(value: Any) -> Any:
    """A multipart part's content as httpx takes it. Negative cases put any JSON value where a
    file belongs (an int, a list); such a value is sent as its JSON text, which is exactly the
    malformed upload the case means to try."""
    if isinstance(value, bytes | str) or hasattr(value, "read"):
        return value
    return json.dumps(value).encode()


def _files(files: Any) -> Any:
    if not files:
        return None
    items = files.items() if isinstance(files, dict) else files
    normalised: list[tuple[str, Any]] = []
    for name, value in items:
        if isinstance(value, tuple) and len(value) >= 2:
            normalised.append((name, (value[0], _part(value[1]), *value[2:])))
        else:
            normalised.append((name, _part(value)))
    return normalised


def _checks() -> list[tuple[str, Callable[..., Any]]]:
    load_all_checks()
    builtins = {function.__name__: function for function in ST_CHECKS.get_all()}
    chosen = [(name, builtins[name]) for name, _, _ in BUILTIN_CHECKS]
    return chosen + list(SCHEMATHESIS_CHECKS.items())


class _OutOfTime(Exception):
    """The fuzz's wall-time allowance is spent."""


def fuzz(
    target: Target,
    *,
    max_examples: int,
    seed: int,
    per_check_cap: int = 3,
    deadline: float | None = None,
    wall: Callable[[], float] = time.monotonic,
    observe: Callable[[Exchange], None] | None = None,
) -> FuzzResult:
    """Fuzz every operation of the profile in both modes, until ``deadline`` (wall seconds) if
    one is given; never raises for a failed check. ``observe`` sees every exchange (the run's
    model judges the fuzz's traffic too)."""
    result = FuzzResult()
    if max_examples <= 0:
        return result
    schema = _schema(seed, target.credentials.api)
    checks = _checks()
    created: list[str] = []
    kept: dict[tuple[str, str], int] = {}

    def judge(case: Any, mode: GenerationMode) -> None:
        if deadline is not None and wall() > deadline:
            raise _OutOfTime
        request = _request(target, case)
        exchange = target.send(request, operation=case.operation.label, observe=False)
        result.cases += 1
        if observe is not None:
            observe(exchange)
        if (request.method, request.url.path) in _CREATES and 200 <= exchange.status < 300:
            body = exchange.json()
            session = body.get("session", body) if isinstance(body, dict) else None
            if isinstance(session, dict) and isinstance(session.get("id"), str):
                created.append(session["id"])
        assert exchange.response is not None
        response = Response.from_any(exchange.response)
        # A form whose only fault is a field's JSON type reaches the server as valid text, and
        # an empty query value may be read as an absent parameter: neither is surely invalid.
        harmless = mode is GenerationMode.NEGATIVE and (
            form_is_valid_as_sent(case.operation.path, case.operation.method, case.body)
            or any(value in ("", None) for value in (case.query or {}).values())
        )
        for name, function in checks:
            if harmless and name == "negative_data_rejection":
                continue
            try:
                case.validate_response(response, checks=[function])
            except (Failure, FailureGroup) as exc:
                failures = exc.exceptions if isinstance(exc, FailureGroup) else (exc,)
                key = (name, case.operation.label)
                for failure in failures:
                    if kept.get(key, 0) >= per_check_cap:
                        break
                    kept[key] = kept.get(key, 0) + 1
                    message = f"{failure.title}: {failure.message}".strip()
                    result.failures.append(
                        FuzzFailure(name, case.operation.label, message, exchange)
                    )
            if name not in SCHEMATHESIS_CHECKS:
                result.applied[name] = result.applied.get(name, 0) + 1

    with counting() as custom_applied:
        try:
            for outcome in schema.get_all_operations():
                operation = outcome.ok()
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    _run(operation, mode, judge, max_examples, seed, result)
        except _OutOfTime:
            result.errors.append(
                f"the fuzz stopped at its time allowance after {result.cases} cases"
            )
    result.applied.update(custom_applied)
    for session_id in created:
        ended = target.request("POST", f"/v1/sessions/{session_id}/end", observe=False)
        if observe is not None:
            observe(ended)
    return result


def _run(
    operation: Any,
    mode: GenerationMode,
    judge: Callable[[Any, GenerationMode], None],
    max_examples: int,
    seed: int,
    result: FuzzResult,
) -> None:
    @settings(
        max_examples=max_examples,
        phases=[Phase.explicit, Phase.generate],
        database=None,
        deadline=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @hypothesis_seed(seed)
    @given(case=operation.as_strategy(generation_mode=mode))
    def each(case: Any) -> None:
        judge(case, mode)

    try:
        each()
    except Unsatisfiable:
        return  # nothing to negate (an operation without parameters or body)
    except (TargetUnreachable, _OutOfTime):
        raise
    except Exception as exc:  # a broken strategy is reported, not fatal
        result.errors.append(f"{operation.label} ({mode.value}): {type(exc).__name__}: {exc}")
