"""Request validation derived from the OpenAPI document, never written out a second time.

Every parameter and body schema is checked with JSON Schema Draft 2020-12 (OpenAPI 3.1's
dialect) against the spec document itself: a schema is addressed by its JSON pointer inside the
document, so ``$ref``s to ``#/components/...`` resolve exactly as the spec wrote them and a bound
or enum changed in the spec changes the facade with it.

A violation becomes a ``Failure`` in the words of GAP-ERR-1: a ``validation.*`` code (or
``<field>.too_large`` for the spec's ``x-max-bytes``) and ``param``, the offending field's dot-path.
Failures come back in a fixed order (shallowest first, then by path), so the facade reports the
same one for the same request every time.

Discriminated unions (``oneOf`` + ``discriminator``) are validated against the branch the
discriminator names, which gives errors about the fields the client meant to send rather than the
union's "matched none of the alternatives".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import quote

from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

__all__ = ["Failure", "SpecSchemas", "coerce", "pointer"]

_DOC_URI = "urn:avatar-sim:openapi"

_RANGE = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "multipleOf",
        "uniqueItems",
    }
)
_ENUM = frozenset({"enum", "const"})
_FORMAT = frozenset({"format", "pattern", "propertyNames", "not", "contentEncoding"})
_UNKNOWN = frozenset({"additionalProperties", "unevaluatedProperties"})
_MAX_BYTES = "x-max-bytes"


def _max_bytes(validator: Any, limit: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """The spec's ``x-max-bytes``: a bound on the compact UTF-8 JSON of a value (metadata)."""
    if not isinstance(limit, int):
        return
    size = len(json.dumps(instance, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > limit:
        yield ValidationError(f"is {size} bytes serialised; the limit is {limit}")


#: Draft 2020-12 plus the spec's one custom keyword.
_Validator = validators.extend(Draft202012Validator, {_MAX_BYTES: _max_bytes})


def pointer(*segments: str) -> str:
    """A JSON pointer (RFC 6901) to a place in the spec document."""
    escaped = (s.replace("~", "~0").replace("/", "~1") for s in segments)
    return "/" + "/".join(escaped)


@dataclass(frozen=True, slots=True)
class Failure:
    """One schema violation in the facade's terms, before it becomes a ``DomainError``."""

    code: str
    param: str | None
    message: str
    keyword: str
    schema: Mapping[str, Any]
    path: tuple[str | int, ...]


class SpecSchemas:
    """Validators for schemas addressed by pointer inside one OpenAPI document."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document
        resource: Resource[Any] = DRAFT202012.create_resource(document)
        self._registry: Registry[Any] = Registry().with_resource(_DOC_URI, resource)
        self._validator = cache(self._build)

    def _build(self, schema_pointer: str) -> Draft202012Validator:
        ref = {"$ref": _DOC_URI + "#" + quote(schema_pointer, safe="/~")}
        validator: Draft202012Validator = _Validator(
            ref, registry=self._registry, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        return validator

    def resolve(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """Follow ``$ref``s (local ones only) until a concrete object."""
        seen = 0
        while "$ref" in node and isinstance(node["$ref"], str):
            node = self.at(node["$ref"].removeprefix("#"))
            seen += 1
            if seen > 32:
                raise ValueError("reference cycle in the spec")
        return node

    def at(self, json_pointer: str) -> Mapping[str, Any]:
        node: Any = self.document
        for raw in json_pointer.lstrip("/").split("/") if json_pointer.strip("/") else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node[key]
        if not isinstance(node, Mapping):
            raise TypeError(f"{json_pointer} is not an object")
        return node

    def failures(self, instance: Any, schema_pointer: str) -> list[Failure]:
        """Every violation of ``instance`` against the schema at ``schema_pointer``, ordered."""
        validator = self._validator(schema_pointer)
        found: dict[tuple[str, str | None], Failure] = {}
        for error in validator.iter_errors(instance):
            for failure in self._explain(error):
                found.setdefault((failure.code, failure.param), failure)
        return sorted(found.values(), key=_order)

    # -- turning jsonschema's errors into Failures ----------------------------------------------

    def _explain(self, error: ValidationError) -> Iterator[Failure]:
        path = tuple(error.absolute_path)
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        keyword = str(error.validator)
        if keyword in ("oneOf", "anyOf") and error.context:
            yield from self._explain_union(error, schema, path)
            return
        if keyword == "required":
            instance = error.instance if isinstance(error.instance, Mapping) else {}
            required = error.validator_value if isinstance(error.validator_value, list) else []
            for name in required:
                if name not in instance:
                    yield Failure(
                        "validation.required",
                        _join(path, name),
                        f"{_join(path, name)} is required.",
                        keyword,
                        schema,
                        (*path, name),
                    )
            return
        if keyword in _UNKNOWN:
            for name in _unknown_fields(error.instance, schema):
                yield Failure(
                    "validation.unknown_field",
                    _join(path, name),
                    f"{_join(path, name)} is not a known field.",
                    keyword,
                    schema,
                    (*path, name),
                )
            return
        where = _join(path) or None
        if keyword == _MAX_BYTES:
            code = f"{path[-1]}.too_large" if path else "body.too_large"
            yield Failure(code, where, _message(where, error), keyword, schema, path)
            return
        code = _code_of(keyword)
        yield Failure(code, where, _message(where, error), keyword, schema, path)

    def _explain_union(
        self, error: ValidationError, schema: Mapping[str, Any], path: tuple[str | int, ...]
    ) -> Iterator[Failure]:
        discriminator = schema.get("discriminator")
        instance = error.instance
        if isinstance(discriminator, Mapping) and isinstance(instance, Mapping):
            prop = str(discriminator.get("propertyName"))
            where = _join(path, prop)
            if prop not in instance:
                yield Failure(
                    "validation.required",
                    where,
                    f"{where} is required.",
                    "discriminator",
                    schema,
                    (*path, prop),
                )
                return
            branch = self._branch(schema, str(instance[prop]))
            if branch is None:
                yield Failure(
                    "validation.enum",
                    where,
                    f"{where} is not one of the allowed types.",
                    "discriminator",
                    schema,
                    (*path, prop),
                )
                return
            branch_errors = [e for e in error.context or () if _in_branch(e, branch)]
            if branch_errors:
                for sub in branch_errors:
                    yield from self._explain(sub)
                return
        # No usable discriminator: report the alternative that got furthest (fewest errors,
        # deepest first), which is what the client most likely meant.
        by_branch: dict[int, list[ValidationError]] = {}
        for sub in error.context or ():
            index = sub.schema_path[0] if sub.schema_path else 0
            by_branch.setdefault(int(index), []).append(sub)
        if not by_branch:
            place = _join(path) or None
            yield Failure("validation.type", place, _message(place, error), "oneOf", schema, path)
            return
        best = min(
            by_branch.values(), key=lambda errs: (len(errs), -max(len(e.path) for e in errs))
        )
        for sub in best:
            yield from self._explain(sub)

    def _branch(self, schema: Mapping[str, Any], value: str) -> int | None:
        """Index of the union alternative the discriminator value selects."""
        alternatives = schema.get("oneOf") or schema.get("anyOf") or []
        discriminator = schema.get("discriminator") or {}
        mapping = discriminator.get("mapping") or {}
        prop = discriminator.get("propertyName")
        target = mapping.get(value)
        for index, alternative in enumerate(alternatives):
            if target is not None and alternative.get("$ref") == target:
                return int(index)
            resolved = self.resolve(alternative)
            field = (resolved.get("properties") or {}).get(prop) or {}
            field = self.resolve(field)
            allowed = [field["const"]] if "const" in field else list(field.get("enum") or [])
            if value in allowed:
                return int(index)
        return None


def _in_branch(error: ValidationError, branch: int) -> bool:
    return bool(error.schema_path) and error.schema_path[0] == branch


def _order(failure: Failure) -> tuple[int, str]:
    # Shallow before deep, then alphabetical: deterministic and about the outermost mistake.
    return (len(failure.path), ".".join(str(p) for p in failure.path))


def _join(path: Iterable[str | int], *more: str | int) -> str:
    return ".".join(str(p) for p in (*path, *more))


def _code_of(keyword: str) -> str:
    if keyword == "type":
        return "validation.type"
    if keyword in _RANGE:
        return "validation.range"
    if keyword in _ENUM:
        return "validation.enum"
    if keyword in _FORMAT:
        return "validation.format"
    return "validation.invalid"


def _message(where: str | None, error: ValidationError) -> str:
    subject = where or "The request"
    return f"{subject}: {error.message}"[:500]


def _unknown_fields(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    if not isinstance(instance, Mapping):
        return []
    known = set((schema.get("properties") or {}).keys())
    patterns = [re.compile(p) for p in (schema.get("patternProperties") or {})]
    return sorted(
        str(name)
        for name in instance
        if name not in known and not any(p.search(str(name)) for p in patterns)
    )


def coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    """A query, path or header string as the type its schema declares, when it parses as one.

    A value that does not parse stays a string, so validation reports ``validation.type``
    instead of the facade guessing.
    """
    types = schema.get("type")
    candidates = [types] if isinstance(types, str) else list(types or [])
    for kind in candidates:
        if kind == "integer" and re.fullmatch(r"[+-]?\d{1,4000}", raw):
            return int(raw)
        if kind == "number" and re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?", raw):
            number = float(raw)
            return (
                int(number)
                if number.is_integer() and "." not in raw and "e" not in raw.lower()
                else number
            )
        if kind == "boolean" and raw in ("true", "false"):
            return raw == "true"
        if kind == "null" and raw in ("", "null"):
            return None
    return raw
