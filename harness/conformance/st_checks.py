"""The harness's response checks, registered with schemathesis 4's check API.

Why a scope: schemathesis keeps one process-wide registry and runs every registered check in any
run that enables all checks. The simulator's own fuzz (which deliberately turns rate limits off)
must not be judged by checks meant for a deployment, so these checks act only inside
``conformance_scope()``; the harness enters it while fuzzing, and a user running schemathesis
directly can enter it too.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
import schemathesis
from schemathesis.core.failures import Failure

from harness.conformance.checks import Check, CheckFailed, response_checks
from harness.conformance.target import Exchange

__all__ = ["SCHEMATHESIS_CHECKS", "ConformanceFailure", "conformance_scope", "exchange_of"]

_ACTIVE: contextvars.ContextVar[Counter[str] | None] = contextvars.ContextVar(
    "conformance_active", default=None
)


@contextmanager
def conformance_scope() -> Iterator[Counter[str]]:
    """Within this block the registered conformance checks judge responses; the counter it
    yields counts, per check, the responses each check applied to."""
    applied: Counter[str] = Counter()
    token = _ACTIVE.set(applied)
    try:
        yield applied
    finally:
        _ACTIVE.reset(token)


class ConformanceFailure(Failure):
    """A failure of one of the harness's checks, as schemathesis reports it."""

    code = "ST990"
    kind_title = "Contract check failed"


def exchange_of(response: Any) -> Exchange:
    """A schemathesis ``Response`` as the harness's ``Exchange``."""
    request = response.request
    body = request.body or b""
    headers = httpx.Headers([(k, v) for k, values in response.headers.items() for v in values])
    return Exchange(
        method=str(request.method),
        url=str(request.url),
        path=urlsplit(str(request.url)).path,
        request_headers=dict(request.headers),
        request_body=body.encode() if isinstance(body, str) else bytes(body),
        status=int(response.status_code),
        headers=headers,
        body=bytes(response.content),
    )


def _wrap(check: Check) -> Any:
    function = check.response
    assert function is not None

    def run(ctx: Any, response: Any, case: Any) -> bool | None:
        counter = _ACTIVE.get()
        if counter is None:
            return None
        try:
            applied = function(exchange_of(response))
        except CheckFailed as failure:
            counter[check.name] += 1
            raise ConformanceFailure(
                operation=case.operation.label,
                title=f"{check.name} ({', '.join(check.requirements)})",
                message=failure.message,
            ) from None
        if applied:
            counter[check.name] += 1
        return None

    run.__name__ = check.name
    run.__qualname__ = check.name
    run.__doc__ = check.description
    return schemathesis.check(run)


#: The schemathesis check function of each response check, by check name.
SCHEMATHESIS_CHECKS: dict[str, Any] = {check.name: _wrap(check) for check in response_checks()}
