"""Which operation of the contract profile an observed exchange is, and what its body must be.

Why from the profile: the per-response checks must know that ``GET /v1/sessions/sess_…`` answers
a session and ``DELETE /v1/runs/run_…`` a run deletion, on any deployment, by the contract alone.
The profile (``spec/profile/openapi.contract.yaml``) already holds every path template and the
schema of each success response with the simulator's gap choices taken out, so the harness reads
both from it instead of writing them again. Operations are found by ``operationId``, which stays
stable whatever the component schemas are called.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from harness.conformance.target import Exchange
from harness.contract.loader import PROFILE_FILE, default_spec_dir, load_yaml

__all__ = ["Operation", "body_problem", "load_profile", "operation_of", "profile_operations"]

_URI = "urn:avatar-sim:contract-profile"
_METHODS = ("get", "put", "post", "delete", "patch")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the profile: its id, method, template and success body schema."""

    operation_id: str
    method: str
    template: str
    regex: re.Pattern[str]
    success_schema: str | None  # JSON pointer of the 2xx JSON body schema, if any


@functools.cache
def load_profile() -> Mapping[str, Any]:
    """The contract profile, read once per process (treat as read-only)."""
    return load_yaml(default_spec_dir() / PROFILE_FILE)


def _pointer(*segments: str) -> str:
    return "/" + "/".join(s.replace("~", "~0").replace("/", "~1") for s in segments)


def _compile(template: str) -> re.Pattern[str]:
    pattern, position = "", 0
    for found in _PLACEHOLDER.finditer(template):
        pattern += re.escape(template[position : found.start()])
        # A trailing id may hold a slash: a model id is ``<publisher>/<model>`` (the seed).
        last = found.end() == len(template)
        pattern += f"(?P<{found.group(1)}>.+)" if last else f"(?P<{found.group(1)}>[^/]+)"
        position = found.end()
    return re.compile(pattern + re.escape(template[position:]))


def _success_schema(path: str, method: str, operation: Mapping[str, Any]) -> str | None:
    for status, response in (operation.get("responses") or {}).items():
        if not str(status).upper().startswith("2") or not isinstance(response, Mapping):
            continue
        content = response.get("content") or {}
        if "application/json" in content and "schema" in content["application/json"]:
            return _pointer(
                "paths", path, method, "responses", str(status), "content", "application/json",
                "schema",
            )  # fmt: skip
    return None


@functools.cache
def profile_operations() -> tuple[Operation, ...]:
    """Every operation of the profile, literal paths before templated ones."""
    found: list[Operation] = []
    for path, item in (load_profile().get("paths") or {}).items():
        for method in _METHODS:
            operation = item.get(method) if isinstance(item, Mapping) else None
            if isinstance(operation, Mapping) and "operationId" in operation:
                found.append(
                    Operation(
                        operation_id=str(operation["operationId"]),
                        method=method.upper(),
                        template=str(path),
                        regex=_compile(str(path)),
                        success_schema=_success_schema(str(path), method, operation),
                    )
                )
    found.sort(key=lambda op: (op.template.count("{"), -len(op.template)))
    return tuple(found)


def operation_of(exchange: Exchange) -> Operation | None:
    """The profile operation ``exchange`` called, or ``None`` (outside the contract)."""
    path = unquote(exchange.path)
    for operation in profile_operations():
        if operation.method == exchange.method and operation.regex.fullmatch(path):
            return operation
    return None


@functools.cache
def _validator(pointer: str) -> Draft202012Validator:
    resource: Resource[Any] = DRAFT202012.create_resource(dict(load_profile()))
    registry: Registry[Any] = Registry().with_resource(_URI, resource)
    schema = {"$ref": _URI + "#" + quote(pointer, safe="/~")}
    return Draft202012Validator(schema, registry=registry)


def body_problem(operation: Operation, body: Any) -> str | None:
    """Why ``body`` is not the success body the profile states for ``operation`` (``None`` if
    it is, or if the profile states no JSON body)."""
    if operation.success_schema is None:
        return None
    errors = sorted(
        _validator(operation.success_schema).iter_errors(body),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "(the body)"
    return f"{where}: {first.message[:300]}"
