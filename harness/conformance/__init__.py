"""The conformance harness: hold any implementation of the API to the contract profile (HAR-2).

It reaches the implementation through a ``harness.target.Target`` (a base URL or the simulator
in process); ``run`` applies every registered check (``CHECKS``) and fuzzes through it, and the
``Report`` renders the outcome for a terminal, a CI (JUnit XML) and an archive (JSON or
Markdown). ``avatar-sim conformance`` is the command line.

Names are imported on first use, so importing the package does not pay for schemathesis and the
fuzzer until a run needs them.
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
    "FailureRecord",
    "Incomplete",
    "Inputs",
    "NotApplicable",
    "Report",
    "RunOptions",
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
    "Inputs": "inputs",
    "FailureRecord": "report",
    "Report": "report",
    "RunOptions": "runner",
    "run": "runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
