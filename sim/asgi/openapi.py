"""Where the facade finds the contract: the project's one loader, read once per process.

The facade, the conformance harness, the CLI and the tests must agree on which copy of
``spec/openapi.yaml`` they read (a checkout's own, else the one an installed wheel carries), so
the facade uses ``harness.contract.loader`` rather than a second search of its own. The document
is parsed once and shared read-only: the facade never mutates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from harness.contract.loader import load_spec

__all__ = ["load_openapi"]


@cache
def load_openapi() -> Mapping[str, Any]:
    """The parsed OpenAPI document (cached; treat it as read-only)."""
    return load_spec()
