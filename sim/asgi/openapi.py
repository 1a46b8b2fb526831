"""Finding and reading the contract (``spec/``): the project's one loader.

Why it lives in the facade: the facade routes and validates by ``spec/openapi.yaml`` and serves
it (and the contract profile) to clients, the conformance harness and the contract tooling read
the same files, and they must agree on *which* copy. The facade is the only part of ``sim`` that
may touch files, and the harness may import the facade but never the other way round, so the
loader sits here and ``harness.contract`` re-exports it.

Which copy: a source checkout keeps the contract at ``<repo>/spec``; an installed wheel carries it
as ``harness/_spec`` (pyproject's force-include). The checkout wins, so an edit to ``spec/`` takes
effect without reinstalling.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "OPENAPI_FILE",
    "PROFILE_FILE",
    "SCHEMAS_DIR",
    "default_spec_dir",
    "load_openapi",
    "load_spec",
    "load_yaml",
    "repo_root",
    "spec_path",
]

#: The hand-written contract, relative to the spec directory.
OPENAPI_FILE = "openapi.yaml"
#: The derived contract profile the conformance harness applies to deployments.
PROFILE_FILE = "profile/openapi.contract.yaml"
#: The derived per-component JSON Schemas.
SCHEMAS_DIR = "schemas"

_PACKAGE_DIR = Path(__file__).resolve().parent  # sim/asgi
_WHEEL_SPEC_DIR = ("harness", "_spec")  # where the wheel carries spec/ (pyproject force-include)


def repo_root() -> Path:
    """The source checkout this package lives in (``sim/asgi`` → two levels up).

    In an installed wheel this is ``site-packages``; callers that need the checkout check for
    ``spec/openapi.yaml`` themselves (``default_spec_dir`` does).
    """
    return _PACKAGE_DIR.parents[1]


def default_spec_dir() -> Path:
    """``<repo>/spec`` when this is a checkout that has it, else the wheel's ``harness/_spec``."""
    checkout = repo_root() / "spec"
    if (checkout / OPENAPI_FILE).is_file():
        return checkout
    return repo_root().joinpath(*_WHEEL_SPEC_DIR)


def spec_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The contract file: ``path`` itself when given, else ``default_spec_dir()/openapi.yaml``."""
    resolved = Path(path) if path is not None else default_spec_dir() / OPENAPI_FILE
    if not resolved.is_file():
        raise FileNotFoundError(f"no OpenAPI document at {resolved}")
    return resolved


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One YAML (or JSON) mapping from ``path``; anything else is refused with the file named."""
    with Path(path).open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return document


def load_spec(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The parsed contract (a fresh copy each call, so callers may mutate it freely).

    ``path`` may name the file; by default the checkout's ``spec/openapi.yaml`` is read, falling
    back to the copy inside an installed wheel.
    """
    document = load_yaml(spec_path(path))
    if "openapi" not in document or not isinstance(document.get("paths"), Mapping):
        raise ValueError(f"{path or OPENAPI_FILE}: not an OpenAPI document")
    return document


@cache
def load_openapi() -> Mapping[str, Any]:
    """The parsed ``spec/openapi.yaml``, read once per process (shared: treat it as read-only)."""
    return load_spec()
