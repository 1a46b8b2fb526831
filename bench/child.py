"""A benchmark's measurement in a fresh interpreter, so nothing another benchmark left behind
(imports, caches, a grown heap) is in what it measures."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

__all__ = ["report_of_child"]


def report_of_child(module: str, *args: str, what: str) -> dict[str, Any]:
    """Run ``python -m module args...`` and return the JSON object on its last line of output.

    If it fails, the error names ``what`` was measured and ends with what the child wrote to
    standard error (its traceback), not only its exit status."""
    completed = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        raise RuntimeError(
            f"{what} failed (exit status {completed.returncode}):\n{completed.stderr[-4000:]}"
        )
    report: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report
