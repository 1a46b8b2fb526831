"""The conformance harness: hold any implementation of the API to the contract profile (HAR-2).

It reaches the implementation through a ``harness.target.Target`` (a base URL or the simulator
in process); ``run`` applies every registered check (``CHECKS``) and fuzzes through it, and the
``Report`` renders the outcome for a terminal, a CI (JUnit XML) and an archive (JSON or
Markdown). ``avatar-sim conformance`` is the command line.

Names are imported on first use, so importing the package does not pay for schemathesis and the
fuzzer until a run needs them.
"""

from __future__ import annotations

from harness.lazy import LazyNames

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

_NAMES = LazyNames(
    __name__,
    {
        "checks": ("Check", "CheckFailed", "Incomplete", "NotApplicable"),
        "context": ("Context",),
        "coverage": ("Coverage",),
        "inputs": ("Inputs",),
        "report": ("CheckResult", "FailureRecord", "Report"),
        "runner": ("CHECKS", "RunOptions", "run"),
    },
)


__getattr__ = _NAMES.load
__dir__ = _NAMES.names
