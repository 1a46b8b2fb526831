"""The smallest plausible instance of a JSON Schema: how the harness fills a model's run input.

Why hand-written: a model's ``request_schemas`` (whose inner shape the seed leaves open) is the
only description a deployment gives of a run's input, and the harness needs one deterministic,
small value that satisfies it. The library that does this for Hypothesis
(``hypothesis-jsonschema``) no longer runs on current Hypothesis, and schemathesis keeps its
generator private; the keywords below cover what a catalog's input schemas use. A value that
does not validate against its own schema is not offered (``None``), so the harness never sends a
body it believes invalid.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

__all__ = ["minimal_instance"]

_MISSING = object()


def minimal_instance(schema: Any) -> Any:
    """A small instance of ``schema`` (examples and defaults first), or ``None`` when none is
    found or the schema itself is not valid."""
    if not isinstance(schema, Mapping):
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return None
    value = _build(schema, schema, depth=0)
    if value is _MISSING:
        return None
    validator = Draft202012Validator(schema)
    return value if validator.is_valid(value) else None


def _resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
        return target if isinstance(target, Mapping) else {}
    return node


def _build(node: Any, root: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(node, Mapping) or depth > 16:
        return _MISSING
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return node["enum"][0]
    examples = node.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in node:
        return node["default"]
    for union in ("allOf", "anyOf", "oneOf"):
        parts = node.get(union)
        if isinstance(parts, list) and parts:
            return _build(parts[0], root, depth + 1)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in node):
        properties = node.get("properties") or {}
        return {
            name: _build(properties.get(name, {}), root, depth + 1)
            for name in node.get("required") or []
        }
    if kind == "array":
        count = int(node.get("minItems") or 0)
        return [_build(node.get("items") or {}, root, depth + 1) for _ in range(count)]
    if kind == "string":
        return "a" * max(int(node.get("minLength") or 1), 1)
    if kind in ("integer", "number"):
        low = node.get("minimum", node.get("exclusiveMinimum"))
        value = low if isinstance(low, int | float) else 1
        if "exclusiveMinimum" in node and "minimum" not in node:
            value += 1
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _MISSING
