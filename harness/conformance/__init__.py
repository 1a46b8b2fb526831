"""The conformance harness: hold any implementation of the API to the contract profile (HAR-2).

``Target`` is the seam (a base URL or an in-process app), ``run`` applies every registered check
(``CHECKS``) and fuzzes through it, and the ``Report`` renders the outcome for a terminal, a CI
(JUnit XML) and an archive (JSON or Markdown). ``avatar-sim conformance`` is the command line.
"""

from __future__ import annotations

from harness.conformance.checks import CHECKS, Check, CheckFailed, Skipped
from harness.conformance.report import CheckResult, FailureRecord, Report
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Credentials, Exchange, Target, TargetUnreachable

__all__ = [
    "CHECKS",
    "Check",
    "CheckFailed",
    "CheckResult",
    "Credentials",
    "Exchange",
    "FailureRecord",
    "Report",
    "RunOptions",
    "Skipped",
    "Target",
    "TargetUnreachable",
    "run",
]
