"""Where the facade finds the contract: ``spec/openapi.yaml``, read once per process.

In a source checkout the spec sits at the repository root; an installed wheel carries it as
``harness/_spec`` (see ``pyproject.toml``). The document is parsed with ``yaml.safe_load`` and
shared read-only: the facade never mutates it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import yaml

__all__ = ["load_openapi", "openapi_path"]


def openapi_path() -> Path:
    """The spec file of this checkout or installation."""
    candidates = [Path(__file__).resolve().parents[2] / "spec" / "openapi.yaml"]
    harness = find_spec("harness")
    if harness is not None and harness.origin is not None:
        candidates.append(Path(harness.origin).parent / "_spec" / "openapi.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("spec/openapi.yaml not found next to the sim package")


@cache
def load_openapi() -> Mapping[str, Any]:
    """The parsed OpenAPI document (cached; treat it as read-only)."""
    with openapi_path().open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    if not isinstance(document, dict) or "paths" not in document:
        raise ValueError("spec/openapi.yaml is not an OpenAPI document")
    return document
