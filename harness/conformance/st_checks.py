"""Schemathesis hooks: every response check of the conformance harness, for ``st run``.

    SCHEMATHESIS_HOOKS=harness.conformance.st_checks st run spec/profile/openapi.contract.yaml \
        --url http://127.0.0.1:8080 -H "Authorization: Bearer $API_KEY"

Importing this module registers each check (``error_envelope_closed``, ``request_id_echoed``,
``session_shape``, ...) with schemathesis under its harness name, so every response of the run is
judged by the same rules as ``avatar-sim conformance`` applies, and a failure names the check and
its requirement ids. The repository's ``schemathesis.toml`` holds the rest of the setup for the
contract profile. Nothing else in avatar-sim imports this module: registration is process-wide.
"""

from __future__ import annotations

import schemathesis

from harness.conformance.st_bridge import SCHEMATHESIS_CHECKS

__all__ = ["REGISTERED"]

#: The names registered with schemathesis by importing this module.
REGISTERED: tuple[str, ...] = tuple(
    schemathesis.check(function).__name__ for function in SCHEMATHESIS_CHECKS.values()
)
