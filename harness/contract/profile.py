"""The contract profile: ``spec/openapi.yaml`` with the simulator's gap choices taken out.

Why: the conformance harness holds a deployment to what the service's specification states, never
to the simulator's own choices (HAR-5). The simulator's document marks every element that exists
only because of a choice with ``x-gap``; this module derives, by fixed rules, a second document
that drops or loosens exactly those elements and keeps everything else as written. The rules are
recorded in ``spec/DECISIONS.md`` (GAP-SPEC-1); in short:

- ``x-gap`` elements are dropped or relaxed according to where they sit (see ``_default_action``);
  ``x-gap-profile`` (``drop``, ``relax``, ``keep`` or a replacement schema) overrides that.
- A ``$ref`` to a parameter, response or header component that carries ``x-gap`` counts as marked
  (an OpenAPI reference object cannot carry extensions itself).
- A property marked ``x-seed-optional`` leaves its schema's ``required`` list: the seed does not
  promise it is present, so a deployment may leave it out while it has no value; whatever the
  property holds when present is still checked (GAP-NULL-1).
- Every object schema is opened, except those marked ``x-seed-closed`` (the error envelope).
- Response enums marked ``x-extensible-enum`` accept any string (GAP-VER-2).
- Every operation answers a ``4XX`` with the envelope; links to dropped operations go away;
  ``x-error-codes``/``x-event-types`` shrink to the seed's lists.
- Every response header is optional (its schema still holds when it is sent): the seed ties
  ``Retry-After`` and ``X-RateLimit-*`` to an error's type or code (a ``rate_limit`` 429, an
  ``at_capacity`` 503) and ``X-Request-Id`` to the envelope it echoes, which a response keyed by
  status cannot say; the harness's response checks hold each header to where the seed names it.

Since the simulator's responses satisfy the simulator's document, and every rule only removes
constraints from responses, the simulator also satisfies the profile.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["GAP_KEYS", "SEED_OPTIONAL", "derive_profile", "gap_ids"]

#: The marker a property carries when the seed does not promise its presence (GAP-NULL-1).
SEED_OPTIONAL: Final = "x-seed-optional"
#: The marker keys this module consumes; none of them survives into the profile.
GAP_KEYS: Final = ("x-gap", "x-gap-profile", SEED_OPTIONAL)

_HTTP_METHODS: Final = frozenset(
    {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
)
#: What a relaxed schema keeps: its JSON type and the annotations that do not constrain.
_RELAX_KEEP: Final = frozenset(
    {
        "type",
        "format",
        "description",
        "title",
        "examples",
        "readOnly",
        "writeOnly",
        "contentMediaType",
    }
)
#: Schema keywords whose subschema is a condition or a prohibition: a marked one is dropped whole.
_CONDITIONALS: Final = frozenset({"if", "then", "else", "not", "dependentSchemas"})
_REF_COMPONENTS: Final = re.compile(r"^#/components/(parameters|responses|headers)/(.+)$")
_COMPONENT_REF: Final = re.compile(r"^#/components/([A-Za-z]+)/([^/]+)$")

_DROP: Final = "drop"
_RELAX: Final = "relax"
_KEEP: Final = "keep"
_SUCCESS: Final = "2XX"

Action = str | dict[str, Any]


def gap_ids(document: Any) -> set[str]:
    """Every ``x-gap`` id used anywhere in ``document``."""
    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            mark = node.get("x-gap")
            if isinstance(mark, str):
                found.add(mark)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(document)
    return found


def derive_profile(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The contract profile of ``spec`` (a new document; ``spec`` is not modified)."""
    source = copy.deepcopy(dict(spec))
    marked_components = _marked_components(source)
    profile = _Transformer(marked_components).document(source)
    _open_objects(profile)
    _relax_extensible_enums(profile)
    _finish_operations(profile)
    _optional_headers(profile)
    _prune_components(profile)
    _shrink_root_lists(profile)
    info = profile.setdefault("info", {})
    info["title"] = f"{info.get('title', 'API')} — contract profile"
    info["description"] = (
        "Derived from spec/openapi.yaml by `avatar-sim spec build`; do not edit. "
        "The simulator's gap choices (x-gap) are dropped or relaxed (spec/DECISIONS.md, "
        "GAP-SPEC-1), so this document checks only what the service's specification states."
    )
    info.pop("summary", None)
    return profile


# -- step 1: the marks ----------------------------------------------------------------------------


def _marked_components(document: Mapping[str, Any]) -> dict[str, Action]:
    """``$ref`` target → action, for parameter/response/header components carrying ``x-gap``."""
    marked: dict[str, Action] = {}
    components = document.get("components") or {}
    for section in ("parameters", "responses", "headers"):
        for name, node in (components.get(section) or {}).items():
            if isinstance(node, dict) and "x-gap" in node:
                override = node.get("x-gap-profile")
                marked[f"#/components/{section}/{name}"] = override if override else _DROP
    return marked


class _Transformer:
    """One walk over the document applying the ``x-gap`` rules by location."""

    def __init__(self, marked_components: Mapping[str, Action]) -> None:
        self._marked = marked_components

    def document(self, node: dict[str, Any]) -> dict[str, Any]:
        result = self._walk(node, (), frozenset())
        assert isinstance(result, dict)
        return result

    def _action_of(self, child: Any, where: _Place) -> Action | None:
        """What to do with ``child`` at ``where``, or None when it is not marked."""
        if not isinstance(child, dict):
            return None
        if "x-gap" in child:
            override = child.get("x-gap-profile")
            if isinstance(override, dict | str) and override:
                return override
            return _default_action(child, where)
        ref = child.get("$ref")
        if isinstance(ref, str) and _REF_COMPONENTS.match(ref) and ref in self._marked:
            marked = self._marked[ref]
            if marked == _DROP:
                return _default_action(child, where)
            return marked
        return None

    def _walk(self, node: Any, path: tuple[str, ...], required: frozenset[str]) -> Any:
        """``node`` (found at ``path``) with the rules applied below it.

        ``required`` is the ``required`` list of the schema whose ``properties`` map ``node`` is
        (empty elsewhere): a marked optional property is dropped, a marked required one relaxed.
        """
        if isinstance(node, list):
            items: list[Any] = []
            for index, child in enumerate(node):
                action = self._action_of(child, _Place(path, str(index), True, required))
                if action == _DROP:
                    continue
                items.append(self._walk(_apply(action, child), (*path, str(index)), frozenset()))
            return items
        if not isinstance(node, dict):
            return node
        result: dict[str, Any] = {}
        for key, child in node.items():
            if key in GAP_KEYS:
                continue
            if key == "required" and isinstance(child, list):
                child = _still_required(child, node.get("properties"))
            action = self._action_of(child, _Place(path, key, False, required))
            if action == _DROP:
                continue
            out_key = _SUCCESS if action == _SUCCESS else key
            below = frozenset(node.get("required") or []) if key == "properties" else frozenset()
            result[out_key] = self._walk(_apply(action, child), (*path, key), below)
        return result


def _still_required(required: list[Any], properties: Any) -> list[Any]:
    """``required`` without the properties the seed does not promise (``x-seed-optional``)."""
    if not isinstance(properties, dict):
        return required
    return [
        name
        for name in required
        if not (isinstance(properties.get(name), dict) and properties[name].get(SEED_OPTIONAL))
    ]


class _Place:
    """Where a child sits: its container's path, its key, whether the container is a list, and
    (for a property) the owning schema's required names."""

    __slots__ = ("in_list", "key", "path", "required")

    def __init__(
        self, path: tuple[str, ...], key: str, in_list: bool, required: frozenset[str]
    ) -> None:
        self.path = path
        self.key = key
        self.in_list = in_list
        self.required = required


def _default_action(child: Mapping[str, Any], where: _Place) -> str:
    """The rule for a marked element, by where it sits (DECISIONS GAP-SPEC-1)."""
    path, key = where.path, where.key
    container = path[-1] if path else ""
    if "operationId" in child and key in _HTTP_METHODS:
        return _DROP  # an operation the seed does not give
    if key in _CONDITIONALS and container not in ("properties", "patternProperties"):
        return _DROP  # relaxing a condition would change what it constrains, not loosen it
    if where.in_list:
        return _DROP  # a parameter, an allOf refinement, a union member
    if container == "responses" and len(path) >= 2 and path[-2] != "components":
        # A success code of our choosing becomes "any 2xx"; an extra error response goes (the
        # profile's 4XX catch-all answers for it).
        return _SUCCESS if key.startswith("2") else _DROP
    if container in ("headers", "content", "links"):
        return _DROP
    if container == "properties":
        return _RELAX if key in where.required else _DROP
    if len(path) >= 2 and path[-2] == "components" and container != "schemas":
        return _DROP  # a marked parameter/response/header component: its uses are dropped
    return _RELAX


def _apply(action: Action | None, child: Any) -> Any:
    if action is None or action in (_KEEP, _SUCCESS):
        return child
    if action == _RELAX:
        return _relax(child)
    if isinstance(action, dict):
        return copy.deepcopy(action)
    raise ValueError(f"unknown x-gap-profile action {action!r}")


def _relax(schema: Any) -> Any:
    """The schema reduced to its JSON type (and format, description and other annotations)."""
    if not isinstance(schema, dict):
        return schema
    return {k: copy.deepcopy(v) for k, v in schema.items() if k in _RELAX_KEEP}


# -- step 2: open objects, extensible enums -------------------------------------------------------


def _visit_schemas(node: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    """Call ``visit`` on every mapping of the document, depth first."""
    if isinstance(node, dict):
        visit(node)
        for value in list(node.values()):
            _visit_schemas(value, visit)
    elif isinstance(node, list):
        for value in node:
            _visit_schemas(value, visit)


def _open_objects(document: dict[str, Any]) -> None:
    def visit(node: dict[str, Any]) -> None:
        if node.get("additionalProperties") is False and not node.get("x-seed-closed"):
            del node["additionalProperties"]

    _visit_schemas(document, visit)


def _relax_extensible_enums(document: dict[str, Any]) -> None:
    def visit(node: dict[str, Any]) -> None:
        if node.pop("x-extensible-enum", False):
            node.pop("enum", None)
        names = node.get("propertyNames")
        if isinstance(names, dict) and names.get("x-extensible-enum"):
            names.pop("x-extensible-enum")
            names.pop("enum", None)
            if not names:
                del node["propertyNames"]

    _visit_schemas(document, visit)


# -- step 3: operations ---------------------------------------------------------------------------


def _envelope_response() -> dict[str, Any]:
    return {
        "description": "Any client error; the seed requires the error envelope on every non-2xx.",
        "headers": {"X-Request-Id": {"$ref": "#/components/headers/X-Request-Id"}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _operations(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for item in (document.get("paths") or {}).values():
        if isinstance(item, dict):
            found.extend(
                op for m, op in item.items() if m in _HTTP_METHODS and isinstance(op, dict)
            )
    return found


def _finish_operations(document: dict[str, Any]) -> None:
    paths = document.get("paths") or {}
    for template in list(paths):
        item = paths[template]
        if not any(m in _HTTP_METHODS for m in item):
            del paths[template]  # every operation of the path was a gap choice
    operation_ids = {op.get("operationId") for op in _operations(document)}
    seed_codes = set(document.get("x-seed-error-codes") or [])
    for operation in _operations(document):
        responses = operation.setdefault("responses", {})
        responses.setdefault("4XX", _envelope_response())
        for response in responses.values():
            links = response.get("links") if isinstance(response, dict) else None
            if isinstance(links, dict):
                for name in [
                    n for n, link in links.items() if link.get("operationId") not in operation_ids
                ]:
                    del links[name]
                if not links:
                    del response["links"]
        if "x-error-codes" in operation:
            operation["x-error-codes"] = sorted(
                code for code in operation["x-error-codes"] if code in seed_codes
            )
        if operation.get("x-rate-limited") and "429" not in responses:
            del operation["x-rate-limited"]


def _optional_headers(document: dict[str, Any]) -> None:
    """Every response header component (and every inline one) becomes optional."""
    for header in ((document.get("components") or {}).get("headers") or {}).values():
        if isinstance(header, dict):
            header["required"] = False
    for operation in _operations(document):
        for response in (operation.get("responses") or {}).values():
            headers = response.get("headers") if isinstance(response, dict) else None
            for header in (headers or {}).values():
                if isinstance(header, dict) and "$ref" not in header:
                    header["required"] = False


def _shrink_root_lists(document: dict[str, Any]) -> None:
    if "x-event-types" in document:
        document["x-event-types"] = sorted(document.get("x-seed-event-types") or [])
    seed_codes = set(document.get("x-seed-error-codes") or [])
    if "x-global-error-codes" in document:
        document["x-global-error-codes"] = sorted(
            c for c in document["x-global-error-codes"] if c in seed_codes
        )


# -- step 4: unreferenced components --------------------------------------------------------------


def _references(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        mapping = node.get("mapping") if isinstance(node.get("mapping"), dict) else None
        if mapping is not None:
            found.update(v for v in mapping.values() if isinstance(v, str))
        for value in node.values():
            _references(value, found)
    elif isinstance(node, list):
        for value in node:
            _references(value, found)


def _prune_components(document: dict[str, Any]) -> None:
    """Drop components nothing refers to any more (repeat: one removal can orphan another)."""
    components = document.get("components") or {}
    while True:
        found: set[str] = set()
        outside = {k: v for k, v in document.items() if k != "components"}
        _references(outside, found)
        for section, entries in components.items():
            if section == "securitySchemes" or not isinstance(entries, dict):
                continue
            for name, node in entries.items():
                inner: set[str] = set()
                _references(node, inner)
                found.update(r for r in inner if r != f"#/components/{section}/{name}")
        removed = False
        for section, entries in components.items():
            if section == "securitySchemes" or not isinstance(entries, dict):
                continue
            for name in list(entries):
                if f"#/components/{section}/{name}" not in found:
                    del entries[name]
                    removed = True
        if not removed:
            return
