"""Deriving the files that follow from ``spec/openapi.yaml``, and checking they are current.

Why derived files at all: other tools want the contract in other shapes. Validators and tests
want one self-contained JSON Schema per resource (``spec/schemas/<Component>.json``); the
conformance harness wants the contract without the simulator's choices
(``spec/profile/openapi.contract.yaml``, see ``profile.py``). Both are generated, never edited,
and committed so that a reviewer sees how a change to the contract changes them.

The output is a pure function of the contract: keys are sorted, formatting is fixed, and
building twice gives the same bytes, so ``check`` can compare text.

Component schemas come in two views. OpenAPI lets one schema serve requests and responses, with
``writeOnly`` properties only in requests (``transport.worker_token``) and ``readOnly`` ones only in
responses. A JSON Schema has no such notion, so each derived file fixes one view: components named
``*Request`` get the request view (``readOnly`` properties forbidden), every other one the response
view (``writeOnly`` properties forbidden), which is what a validator of responses needs.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from harness.contract.loader import OPENAPI_FILE, PROFILE_FILE, SCHEMAS_DIR, load_spec
from harness.contract.profile import derive_profile, gap_ids

__all__ = [
    "SCHEMA_BASE_URI",
    "build_all",
    "check",
    "component_schema",
    "component_schemas",
    "derive_all",
    "render_json",
    "render_yaml",
    "stale_files",
]

#: ``$id`` prefix of the derived schemas (``.invalid`` is reserved: it never resolves).
SCHEMA_BASE_URI: Final = "https://avatar-sim.invalid/spec/schemas/"
_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
_COMPONENT_REF: Final = re.compile(r"^#/components/schemas/([^/]+)$")
_PROFILE_HEADER: Final = (
    "# Derived from spec/openapi.yaml by `avatar-sim spec build`; do not edit.\n"
    "# The contract profile: the simulator's gap choices dropped or relaxed (GAP-SPEC-1).\n"
)
_GAP_ENTRY: Final = re.compile(r"\*\*(GAP-[A-Z]+-[0-9]+)\*\*")

View = Literal["request", "response"]


# -- rendering ------------------------------------------------------------------------------------


def render_json(document: Any) -> str:
    """Stable JSON text: sorted keys, two-space indent, UTF-8 kept, final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_yaml(document: Any, header: str = "") -> str:
    """Stable YAML text: sorted keys, block style, a fixed width."""
    body = yaml.safe_dump(
        document, sort_keys=True, allow_unicode=True, default_flow_style=False, width=100
    )
    return header + body


# -- component schemas ----------------------------------------------------------------------------


def _refs(node: Any) -> Iterable[str]:
    """Names of the component schemas ``node`` refers to (``$ref`` and discriminator mappings)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                match = _COMPONENT_REF.match(value)
                if match:
                    yield match.group(1)
            elif key == "mapping" and isinstance(value, dict):
                for target in value.values():
                    match = _COMPONENT_REF.match(str(target))
                    if match:
                        yield match.group(1)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _closure(schemas: Mapping[str, Any], name: str) -> list[str]:
    """Every component ``name`` needs, itself excluded, in sorted order."""
    seen: set[str] = set()
    pending = list(_refs(schemas[name]))
    while pending:
        current = pending.pop()
        if current in seen or current == name:
            continue
        if current not in schemas:
            raise KeyError(f"#/components/schemas/{name} refers to a missing schema {current!r}")
        seen.add(current)
        pending.extend(_refs(schemas[current]))
    return sorted(seen)


def _convert(node: Any, root: str, view: View) -> Any:
    """``node`` with refs pointing into ``$defs`` and the properties of the other view forbidden."""
    if isinstance(node, list):
        return [_convert(item, root, view) for item in node]
    if not isinstance(node, dict):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            match = _COMPONENT_REF.match(value)
            result[key] = value if not match else _local(match.group(1), root)
        elif key == "mapping" and isinstance(value, dict):
            result[key] = {
                tag: _local(m.group(1), root) if (m := _COMPONENT_REF.match(str(t))) else t
                for tag, t in value.items()
            }
        else:
            result[key] = _convert(value, root, view)
    _forbid_other_view(result, view)
    return result


def _local(name: str, root: str) -> str:
    return "#" if name == root else f"#/$defs/{name}"


def _forbid_other_view(schema: dict[str, Any], view: View) -> None:
    hidden = "writeOnly" if view == "response" else "readOnly"
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    required = schema.get("required")
    for name, sub in list(properties.items()):
        if isinstance(sub, dict) and sub.get(hidden) is True:
            properties[name] = False
            if isinstance(required, list) and name in required:
                required.remove(name)


def component_schema(spec: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``#/components/schemas/<name>``, resolvable on its own."""
    schemas: Mapping[str, Any] = spec["components"]["schemas"]
    view: View = "request" if name.endswith("Request") else "response"
    root = _convert(copy.deepcopy(schemas[name]), name, view)
    if not isinstance(root, dict):
        raise TypeError(f"#/components/schemas/{name} is not an object schema")
    document: dict[str, Any] = {
        "$schema": _DIALECT,
        "$id": f"{SCHEMA_BASE_URI}{name}.json",
        "title": name,
        "x-view": view,
        **root,
    }
    needed = _closure(schemas, name)
    if needed:
        document["$defs"] = {n: _convert(copy.deepcopy(schemas[n]), name, view) for n in needed}
    return document


def component_schemas(spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``component_schema`` for every component schema of ``spec``, by name."""
    names = sorted((spec.get("components") or {}).get("schemas") or {})
    return {name: component_schema(spec, name) for name in names}


# -- the build ------------------------------------------------------------------------------------


def derive_all(spec_dir: Path) -> dict[Path, str]:
    """Every derived file of the contract in ``spec_dir``, path → text (nothing is written)."""
    spec = load_spec(spec_dir / OPENAPI_FILE)
    files: dict[Path, str] = {}
    for name, schema in component_schemas(spec).items():
        files[spec_dir / SCHEMAS_DIR / f"{name}.json"] = render_json(schema)
    files[spec_dir / PROFILE_FILE] = render_yaml(derive_profile(spec), _PROFILE_HEADER)
    return dict(sorted(files.items()))


def _orphans(spec_dir: Path, expected: Mapping[Path, str]) -> list[Path]:
    """Derived-looking files that the contract no longer produces (a removed component)."""
    directory = spec_dir / SCHEMAS_DIR
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if p not in expected)


def build_all(spec_dir: Path) -> dict[Path, str]:
    """Write every derived file (and remove orphaned schema files); returns what was derived.

    Idempotent: a file whose text is already current is not rewritten.
    """
    files = derive_all(spec_dir)
    for path, text in files.items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for orphan in _orphans(spec_dir, files):
        orphan.unlink()
    return files


def stale_files(spec_dir: Path) -> list[Path]:
    """Derived files that are missing, out of date or orphaned."""
    files = derive_all(spec_dir)
    stale = [
        path
        for path, text in files.items()
        if not path.is_file() or path.read_text(encoding="utf-8") != text
    ]
    return sorted(stale + _orphans(spec_dir, files))


def _validation_problems(label: str, document: Mapping[str, Any]) -> list[str]:
    try:
        from openapi_spec_validator import validate
    except ModuleNotFoundError:  # a dev-only dependency; the check is skipped without it
        return []
    try:
        validate(dict(document))
    except Exception as exc:  # the validator raises several unrelated types
        return [f"{label}: not a valid OpenAPI 3.1 document: {str(exc).splitlines()[0]}"]
    return []


def _decision_problems(spec_dir: Path, spec: Mapping[str, Any]) -> list[str]:
    decisions = spec_dir / "DECISIONS.md"
    if not decisions.is_file():
        return []
    entries = set(_GAP_ENTRY.findall(decisions.read_text(encoding="utf-8")))
    return [
        f"{OPENAPI_FILE}: x-gap {gap} has no **{gap}** entry in DECISIONS.md"
        for gap in sorted(gap_ids(spec) - entries)
    ]


def check(spec_dir: Path) -> list[str]:
    """Problems with the contract in ``spec_dir``; an empty list means all is well.

    The contract and its profile must be valid OpenAPI 3.1, every ``x-gap`` id must be decided in
    ``DECISIONS.md``, and every derived file must be current (run ``build`` to fix that).
    """
    spec = load_spec(spec_dir / OPENAPI_FILE)
    problems = _validation_problems(OPENAPI_FILE, spec)
    problems += _validation_problems(PROFILE_FILE, derive_profile(spec))
    problems += _decision_problems(spec_dir, spec)
    for path in stale_files(spec_dir):
        shown = path.relative_to(spec_dir) if path.is_relative_to(spec_dir) else path
        problems.append(f"{shown}: stale or orphaned derived file (run the build)")
    return problems
