"""The harness's response checks in schemathesis 4's check signature, registered nowhere.

Why unregistered: schemathesis keeps one process-wide registry and runs every registered check in
any run that enables all checks, so registering on import would make the simulator's own fuzz
(whose configuration departs from the seed's on purpose) judge itself by checks meant for a
deployment. The
harness's fuzz passes these functions explicitly (``case.validate_response(checks=[...])``);
schemathesis's command line gets them registered by ``harness.conformance.st_checks``, the hooks
module a user names in ``SCHEMATHESIS_HOOKS``.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx
from schemathesis.core.failures import Failure

from harness.conformance import responses  # noqa: F401  (registers the resource checks)
from harness.conformance.checks import Check, CheckFailed, response_checks
from harness.target import Exchange

__all__ = ["SCHEMATHESIS_CHECKS", "ConformanceFailure", "counting", "exchange_of"]

_COUNTER: contextvars.ContextVar[Counter[str] | None] = contextvars.ContextVar(
    "conformance_counter", default=None
)


@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Within this block each check counts the responses it applied to."""
    applied: Counter[str] = Counter()
    token = _COUNTER.set(applied)
    try:
        yield applied
    finally:
        _COUNTER.reset(token)


class ConformanceFailure(Failure):
    """A failure of one of the harness's checks, as schemathesis reports it."""

    code = "ST990"
    kind_title = "Contract check failed"

    @property
    def _unique_key(self) -> str:
        # One finding per operation and check (schemathesis's default is one per class).
        return str(self.title)


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
        counter = _COUNTER.get()
        try:
            applied = function(exchange_of(response))
        except CheckFailed as failure:
            if counter is not None:
                counter[check.name] += 1
            raise ConformanceFailure(
                operation=case.operation.label,
                title=f"{check.name} ({', '.join(check.requirements)})",
                message=failure.message,
            ) from None
        if applied and counter is not None:
            counter[check.name] += 1
        return None

    run.__name__ = check.name
    run.__qualname__ = check.name
    run.__doc__ = check.description
    run.__module__ = __name__
    return run


#: The schemathesis check function of each response check, by check name.
SCHEMATHESIS_CHECKS: dict[str, Any] = {check.name: _wrap(check) for check in response_checks()}
