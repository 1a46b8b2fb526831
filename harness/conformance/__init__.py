"""The conformance harness: hold any implementation of the API to the contract profile (HAR-2).

``Target`` is the seam (a base URL or an in-process app), ``run`` applies every registered check
(``CHECKS``) and fuzzes through it, and the ``Report`` renders the outcome for a terminal, a CI
(JUnit XML) and an archive (JSON or Markdown). ``avatar-sim conformance`` is the command line.

Names are imported on first use: the pytest plugin's in-process client loads ``target`` in every
test run, which must not pay for schemathesis and the fuzzer it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "CHECKS",
    "Check",
    "CheckFailed",
    "CheckResult",
    "Context",
    "Coverage",
    "Credentials",
    "Exchange",
    "FailureRecord",
    "Incomplete",
    "Inputs",
    "NotApplicable",
    "Report",
    "RunOptions",
    "Target",
    "TargetUnreachable",
    "run",
]

_HOMES = {
    "CHECKS": "runner",
    "Check": "checks",
    "CheckFailed": "checks",
    "Incomplete": "checks",
    "NotApplicable": "checks",
    "CheckResult": "report",
    "Context": "context",
    "Coverage": "coverage",
    "Inputs": "context",
    "FailureRecord": "report",
    "Report": "report",
    "RunOptions": "runner",
    "run": "runner",
    "Credentials": "target",
    "Exchange": "target",
    "Target": "target",
    "TargetUnreachable": "target",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
