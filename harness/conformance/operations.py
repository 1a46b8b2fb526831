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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from harness.conformance.target import Exchange
from harness.contract.loader import PROFILE_FILE, default_spec_dir, load_yaml
from sim.asgi.routes import RouteTable
from sim.asgi.validation import SpecSchemas

__all__ = [
    "Operation",
    "body_problem",
    "form_is_valid_as_sent",
    "load_profile",
    "operation_of",
    "operation_params",
]

_URI = "urn:avatar-sim:contract-profile"


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation of the profile: its id and the schema of its 2xx JSON body, if any."""

    operation_id: str
    success_schema: str | None  # JSON pointer into the profile


@functools.cache
def load_profile() -> Mapping[str, Any]:
    """The contract profile, read once per process (treat as read-only)."""
    return load_yaml(default_spec_dir() / PROFILE_FILE)


def _pointer(*segments: str) -> str:
    return "/" + "/".join(s.replace("~", "~0").replace("/", "~1") for s in segments)


@functools.cache
def _routes() -> RouteTable:
    # The facade's own table, read from the profile: the same path matching (a trailing model
    # id may hold its ``/``) without writing it a second time.
    return RouteTable(SpecSchemas(load_profile()))


def _success_schema(path: str, method: str) -> str | None:
    operation = load_profile()["paths"][path][method]
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
def _operation(path: str, method: str) -> Operation:
    operation_id = str(load_profile()["paths"][path][method]["operationId"])
    return Operation(operation_id, _success_schema(path, method))


def operation_of(exchange: Exchange) -> Operation | None:
    """The profile operation ``exchange`` called, or ``None`` (outside the contract)."""
    found = _routes().match(unquote(exchange.path))
    if found is None or exchange.method.upper() not in found[0].routes:
        return None
    return _operation(found[0].template, exchange.method.lower())


def operation_params(exchange: Exchange) -> tuple[str, dict[str, str]] | None:
    """The operation id ``exchange`` called and its path parameters, or ``None``."""
    found = _routes().match(unquote(exchange.path))
    if found is None or exchange.method.upper() not in found[0].routes:
        return None
    return _operation(found[0].template, exchange.method.lower()).operation_id, dict(found[1])


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


def _form_schema(path: str, method: str) -> str | None:
    operation = load_profile()["paths"].get(path, {}).get(method) or {}
    content = (operation.get("requestBody") or {}).get("content") or {}
    if "schema" not in content.get("multipart/form-data", {}):
        return None
    return _pointer(
        "paths", path, method, "requestBody", "content", "multipart/form-data", "schema"
    )


def _as_sent(value: Any) -> Any:
    """A form field as it reaches the server: bytes and text stay, anything else is its text
    (httpx writes ``True`` as ``true`` and ``None`` as an empty field)."""
    if isinstance(value, bytes | str):
        return value.decode("latin-1") if isinstance(value, bytes) else value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def form_is_valid_as_sent(path: str, method: str, body: Any) -> bool:
    """Whether a ``multipart/form-data`` body, as its fields reach the server (every part is
    text or a file), is valid for the operation: a generated "negative" form whose only fault
    is a field's JSON type is no fault on the wire."""
    pointer = _form_schema(path, method.lower())
    if pointer is None or not isinstance(body, Mapping):
        return False
    sent = {name: _as_sent(value) for name, value in body.items()}
    return not any(True for _ in _validator(pointer).iter_errors(sent))
