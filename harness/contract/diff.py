"""Breaking changes between two versions of the contract (VER-1).

Why: the service promises additive-only evolution. Once an endpoint, a request or response
field, a header, an error code, an enum value or an event type has shipped, it is never renamed
or removed; new things are added alongside. This module compares an old and a new OpenAPI
document and reports every change that breaks that promise, so CI can refuse it.

Reported (each as one ``Finding``):

- a removed path or operation (method + path);
- a removed parameter (by location and name), or one that became required, or a new required
  parameter;
- a removed request or response media type, response status code or response header;
- a removed request or response property (schemas are followed through ``$ref``, ``allOf``,
  ``oneOf``, ``anyOf``, ``items`` and ``additionalProperties``), a request property that became
  required, or a new required request property;
- a removed enum value (in parameters, requests or responses) or a narrowed JSON type;
- a removed ``x-error-codes`` code of an operation, ``x-global-error-codes`` code or
  ``x-event-types`` entry.

A rename shows up as a removal (plus an addition, which is allowed and so not reported).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from harness.contract.loader import load_yaml

__all__ = ["Finding", "diff_specs"]

_HTTP_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_COMBINERS: Final = ("allOf", "oneOf", "anyOf")
_MAX_DEPTH: Final = 24
#: The document's own lists, none of whose values may go: (the finding's kind, the key).
_ROOT_LISTS: Final = (
    ("removed-event-type", "x-event-types"),
    ("removed-error-code", "x-global-error-codes"),
)

SpecSource = Mapping[str, Any] | str | os.PathLike[str]


@dataclass(frozen=True, slots=True, order=True)
class Finding:
    """One breaking change: what kind, where (a readable location) and what exactly."""

    kind: str
    location: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.location}: {self.detail}"


def _load(source: SpecSource) -> Mapping[str, Any]:
    if isinstance(source, Mapping):
        return source
    return load_yaml(Path(source))


def diff_specs(old: SpecSource, new: SpecSource) -> list[Finding]:
    """Every change from ``old`` to ``new`` that breaks the additive-only rule, sorted.

    Each side may be a parsed document or the path of a YAML/JSON file.
    """
    versions = _Versions(_Document(_load(old)), _Document(_load(new)))
    before, after = versions.before, versions.after
    findings: list[Finding] = []
    for kind, key in _ROOT_LISTS:
        findings += _list_removals(kind, key, before.root_list(key), after.root_list(key))
    new_paths = after.paths()
    for template, old_item in before.paths().items():
        if template not in new_paths:
            findings.append(Finding("removed-path", template, "path removed"))
            continue
        new_item = new_paths[template]
        for method in _HTTP_METHODS:
            if method not in old_item:
                continue
            where = f"{method.upper()} {template}"
            if method not in new_item:
                findings.append(Finding("removed-operation", where, "operation removed"))
                continue
            findings += versions.operation(where, old_item, new_item, method)
    return sorted(set(findings))


def _list_removals(kind: str, where: str, old: list[str], new: list[str]) -> list[Finding]:
    kept = set(new)
    return [Finding(kind, where, f"{value!r} removed") for value in old if value not in kept]


# -- documents ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Document:
    """A parsed OpenAPI document with local ``$ref`` resolution."""

    raw: Mapping[str, Any]

    def root_list(self, key: str) -> list[str]:
        value = self.raw.get(key)
        return [str(v) for v in value] if isinstance(value, list) else []

    def paths(self) -> dict[str, Mapping[str, Any]]:
        paths = self.raw.get("paths")
        return dict(paths) if isinstance(paths, Mapping) else {}

    def resolve(self, node: Any) -> Any:
        """Follow local ``$ref``s until a node without one (siblings of a ``$ref`` are merged)."""
        hops = 0
        while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
            ref: str = node["$ref"]
            if not ref.startswith("#/"):
                return node
            target: Any = self.raw
            for part in ref[2:].split("/"):
                key = part.replace("~1", "/").replace("~0", "~")
                target = target.get(key) if isinstance(target, Mapping) else None
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if isinstance(target, Mapping) and siblings else target
            hops += 1
            if hops > _MAX_DEPTH:
                raise ValueError(f"$ref loop at {ref}")
        return node


# -- operations -----------------------------------------------------------------------------------


def _parameters(
    doc: _Document, item: Mapping[str, Any], operation: Mapping[str, Any]
) -> dict[tuple[str, str], Mapping[str, Any]]:
    """The operation's effective parameters (path-level ones overridden by its own)."""
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for raw in [*(item.get("parameters") or []), *(operation.get("parameters") or [])]:
        param = doc.resolve(raw)
        if isinstance(param, Mapping) and "name" in param and "in" in param:
            key = (str(param["in"]), str(param["name"]))
            merged[key if key[0] != "header" else (key[0], key[1].lower())] = param
    return merged


@dataclass(frozen=True, slots=True)
class _Versions:
    """The old and the new document: each method compares the same part of both (an operation,
    its request body, its responses) and returns what broke, resolving each side's ``$ref``s in
    its own document."""

    before: _Document
    after: _Document

    def operation(
        self, where: str, old_item: Mapping[str, Any], new_item: Mapping[str, Any], method: str
    ) -> list[Finding]:
        before, after = self.before, self.after
        old_op, new_op = before.resolve(old_item[method]), after.resolve(new_item[method])
        findings: list[Finding] = []
        old_params = _parameters(before, old_item, old_op)
        new_params = _parameters(after, new_item, new_op)
        for key, old_param in old_params.items():
            label = f"{key[0]} parameter {old_param['name']!r}"
            if key not in new_params:
                findings.append(Finding("removed-parameter", where, f"{label} removed"))
                continue
            new_param = new_params[key]
            if new_param.get("required") and not old_param.get("required"):
                findings.append(
                    Finding("parameter-now-required", where, f"{label} became required")
                )
            findings += self.schema(
                f"{where} {label}", old_param.get("schema"), new_param.get("schema"), request=True
            )
        for key, new_param in new_params.items():
            if key not in old_params and new_param.get("required"):
                findings.append(
                    Finding(
                        "new-required-parameter",
                        where,
                        f"{key[0]} parameter {new_param['name']!r} added as required",
                    )
                )
        findings += _list_removals(
            "removed-error-code",
            f"{where} x-error-codes",
            [str(c) for c in old_op.get("x-error-codes") or []],
            [str(c) for c in new_op.get("x-error-codes") or []],
        )
        findings += self.request_body(where, old_op, new_op)
        findings += self.responses(where, old_op, new_op)
        return findings

    def request_body(
        self, where: str, old_op: Mapping[str, Any], new_op: Mapping[str, Any]
    ) -> list[Finding]:
        findings: list[Finding] = []
        old_content = _content(self.before, old_op.get("requestBody"))
        new_content = _content(self.after, new_op.get("requestBody"))
        for media, old_media in old_content.items():
            label = f"{where} request {media}"
            if media not in new_content:
                findings.append(Finding("removed-media-type", label, "request media type removed"))
                continue
            findings += self.schema(
                label, old_media.get("schema"), new_content[media].get("schema"), request=True
            )
        return findings

    def responses(
        self, where: str, old_op: Mapping[str, Any], new_op: Mapping[str, Any]
    ) -> list[Finding]:
        before, after = self.before, self.after
        findings: list[Finding] = []
        old_responses = old_op.get("responses") or {}
        new_responses = new_op.get("responses") or {}
        for status, old_raw in old_responses.items():
            label = f"{where} response {status}"
            if status not in new_responses:
                findings.append(Finding("removed-response", label, "status code removed"))
                continue
            old_resp, new_resp = before.resolve(old_raw), after.resolve(new_responses[status])
            new_headers = {str(h).lower() for h in (new_resp.get("headers") or {})}
            for header in old_resp.get("headers") or {}:
                if str(header).lower() not in new_headers:
                    findings.append(Finding("removed-header", label, f"header {header!r} removed"))
            new_content = _content(after, new_resp)
            for media, old_media in _content(before, old_resp).items():
                if media not in new_content:
                    findings.append(Finding("removed-media-type", label, f"{media} removed"))
                    continue
                findings += self.schema(
                    f"{label} {media}",
                    old_media.get("schema"),
                    new_content[media].get("schema"),
                    request=False,
                )
        return findings

    def schema(self, label: str, old: Any, new: Any, *, request: bool) -> Iterator[Finding]:
        """What broke between the schemas ``old`` (of ``before``) and ``new`` (of ``after``)."""
        return _schema_changes(
            _flatten(self.before, old), _flatten(self.after, new), label, request
        )


def _content(doc: _Document, holder: Any) -> dict[str, Any]:
    resolved = doc.resolve(holder) if holder is not None else None
    content = resolved.get("content") if isinstance(resolved, Mapping) else None
    return dict(content) if isinstance(content, Mapping) else {}


# -- schemas --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Facts:
    """What one place in a schema (a property path) allows, merged over every branch."""

    types: set[str] = field(default_factory=set)
    enum: set[str] | None = None
    required: bool = False
    any_type: bool = False


def _flatten(doc: _Document, schema: Any) -> dict[str, _Facts]:
    """Property path (``a.b``, ``items[]``, ``map{}``; ``""`` is the root) → merged facts."""
    facts: dict[str, _Facts] = {}

    def visit(node: Any, path: str, required: bool, depth: int, stack: tuple[str, ...]) -> None:
        if depth > _MAX_DEPTH:
            return
        ref = node.get("$ref") if isinstance(node, Mapping) else None
        if isinstance(ref, str):
            if ref in stack:
                return
            stack = (*stack, ref)
        node = doc.resolve(node)
        entry = facts.setdefault(path, _Facts())
        entry.required = entry.required or required
        if not isinstance(node, Mapping):
            entry.any_type = True
            return
        kind = node.get("type")
        if kind is None and not any(k in node for k in ("const", "enum", *_COMBINERS)):
            entry.any_type = True
        elif isinstance(kind, str):
            entry.types.add(kind)
        elif isinstance(kind, list):
            entry.types.update(str(k) for k in kind)
        values = node.get("enum")
        if "const" in node:
            values = [node["const"]]
        if isinstance(values, list):
            entry.enum = (entry.enum or set()) | {repr(v) for v in values}
        for combiner in _COMBINERS:
            for branch in node.get(combiner) or []:
                visit(branch, path, False, depth + 1, stack)
        names = set(node.get("required") or [])
        for name, sub in (node.get("properties") or {}).items():
            visit(sub, f"{path}.{name}" if path else str(name), name in names, depth + 1, stack)
        if isinstance(node.get("items"), Mapping):
            visit(node["items"], f"{path}[]", False, depth + 1, stack)
        if isinstance(node.get("additionalProperties"), Mapping):
            visit(node["additionalProperties"], f"{path}{{}}", False, depth + 1, stack)

    if schema is not None:
        visit(schema, "", False, 0, ())
    return facts


def _schema_changes(
    old_facts: dict[str, _Facts], new_facts: dict[str, _Facts], label: str, request: bool
) -> Iterator[Finding]:
    """What broke from the flattened schema ``old_facts`` to ``new_facts`` (``request``: a
    request's, where a property may not become required either)."""
    side = "request" if request else "response"
    for path, was in sorted(old_facts.items()):
        shown = path or "(body)"
        now = new_facts.get(path)
        if now is None:
            yield Finding(f"removed-{side}-property", label, f"{shown} removed")
            continue
        if was.enum is not None and now.enum is not None:
            for value in sorted(was.enum - now.enum):
                yield Finding("removed-enum-value", label, f"{shown}: {value} removed")
        if was.types and now.types and not now.any_type:
            lost = was.types - now.types - ({"integer"} if "number" in now.types else set())
            for kind in sorted(lost):
                yield Finding("narrowed-type", label, f"{shown}: type {kind!r} no longer allowed")
        if request and now.required and not was.required:
            yield Finding("now-required", label, f"{shown} became required")
    if request:
        for path, now in sorted(new_facts.items()):
            parent = path.rsplit(".", 1)[0] if "." in path else ""
            if path not in old_facts and now.required and parent in old_facts:
                yield Finding("new-required-request-property", label, f"{path} added as required")
