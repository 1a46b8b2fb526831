"""The route table, read from the OpenAPI document once when the app is built.

Each ``(path, method)`` of ``paths`` becomes one ``Route``: its operation id, its parameters
(path-item and operation level, ``$ref``s followed), its request body media types and the JSON
pointer of each schema, its documented success status and whether it is public
(``security: []``). Nothing about the API is written here; change the spec and the table follows.

Path templates compile to anchored regexes. A trailing parameter whose schema does not restrict
its characters with a pattern (a model id is ``<publisher>/<model>``, sent raw or as ``%2F``, which
the server decodes) may span segments; only as the template's last segment, so it can never
swallow a fixed suffix such as ``/status``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sim.asgi.validation import SpecSchemas, pointer

__all__ = ["BodySpec", "Parameter", "PathTemplate", "Route", "RouteTable"]

Location = Literal["path", "query", "header"]
_METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    location: Location
    required: bool
    schema: Mapping[str, Any]  # resolved, for coercion
    schema_pointer: str  # for validation, refs intact

    @property
    def key(self) -> str:
        """How the parameter is looked up: header names are case-insensitive."""
        return self.name.lower() if self.location == "header" else self.name


@dataclass(frozen=True, slots=True)
class BodySpec:
    required: bool
    media_types: Mapping[str, str]  # media type -> pointer of its schema

    def schema_for(self, media_type: str) -> str | None:
        return self.media_types.get(media_type)


@dataclass(frozen=True, slots=True)
class Route:
    operation_id: str
    method: str  # upper case
    path: str  # the spec's template
    parameters: tuple[Parameter, ...]
    body: BodySpec | None
    success_status: int
    public: bool

    def parameters_in(self, location: Location) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.location == location)


@dataclass(frozen=True, slots=True)
class PathTemplate:
    template: str
    regex: re.Pattern[str]
    routes: Mapping[str, Route]  # by method

    def match(self, path: str) -> dict[str, str] | None:
        found = self.regex.fullmatch(path)
        return None if found is None else found.groupdict()


class RouteTable:
    """All routes of one spec document, matched by path then method."""

    def __init__(self, schemas: SpecSchemas) -> None:
        self.schemas = schemas
        doc = schemas.document
        global_security = doc.get("security")
        templates: list[PathTemplate] = []
        for path, item in (doc.get("paths") or {}).items():
            routes: dict[str, Route] = {}
            for method in _METHODS:
                if method in item:
                    routes[method.upper()] = self._route(path, method, item, global_security)
            if routes:
                templates.append(PathTemplate(path, self._compile(path, routes), routes))
        # Literal paths before templated ones, so /v1/sessions/x never shadows a fixed route.
        templates.sort(key=lambda t: (t.template.count("{"), -len(t.template)))
        self.templates: tuple[PathTemplate, ...] = tuple(templates)

    @property
    def routes(self) -> tuple[Route, ...]:
        return tuple(r for t in self.templates for r in t.routes.values())

    def match(self, path: str) -> tuple[PathTemplate, dict[str, str]] | None:
        for template in self.templates:
            found = template.match(path)
            if found is not None:
                return template, found
        return None

    # -- building -----------------------------------------------------------------------------

    def _route(
        self, path: str, method: str, item: Mapping[str, Any], global_security: Any
    ) -> Route:
        operation = item[method]
        params: dict[tuple[str, str], Parameter] = {}
        for where, raw_list in (
            (("paths", path, "parameters"), item.get("parameters")),
            (("paths", path, method, "parameters"), operation.get("parameters")),
        ):
            for index, raw in enumerate(raw_list or []):
                parameter = self._parameter(raw, pointer(*where, str(index)))
                if parameter is not None:
                    params[(parameter.location, parameter.key)] = parameter
        security = operation.get("security", global_security)
        return Route(
            operation_id=str(operation["operationId"]),
            method=method.upper(),
            path=path,
            parameters=tuple(params.values()),
            body=self._body(operation, pointer("paths", path, method, "requestBody")),
            success_status=_success_status(operation),
            public=security is not None and len(security) == 0,
        )

    def _parameter(self, raw: Mapping[str, Any], where: str) -> Parameter | None:
        if "$ref" in raw:
            where = str(raw["$ref"]).removeprefix("#")
        resolved = self.schemas.resolve(raw)
        location = resolved.get("in")
        if location not in ("path", "query", "header"):
            return None  # cookies are not part of this API
        schema_pointer = where + "/schema"
        schema = self.schemas.resolve(resolved.get("schema") or {})
        return Parameter(
            name=str(resolved["name"]),
            location=location,
            required=bool(resolved.get("required", location == "path")),
            schema=schema,
            schema_pointer=schema_pointer,
        )

    def _body(self, operation: Mapping[str, Any], where: str) -> BodySpec | None:
        raw = operation.get("requestBody")
        if raw is None:
            return None
        if "$ref" in raw:
            where = str(raw["$ref"]).removeprefix("#")
        resolved = self.schemas.resolve(raw)
        media = {
            str(media_type): pointer(*_split(where), "content", str(media_type), "schema")
            for media_type in (resolved.get("content") or {})
        }
        return BodySpec(required=bool(resolved.get("required", False)), media_types=media)

    def _compile(self, path: str, routes: Mapping[str, Route]) -> re.Pattern[str]:
        names = _PLACEHOLDER.findall(path)
        by_name = {p.name: p for r in routes.values() for p in r.parameters_in("path")}
        pattern = ""
        position = 0
        for found in _PLACEHOLDER.finditer(path):
            pattern += re.escape(path[position : found.start()])
            name = found.group(1)
            last = found.group(0) == path[-len(found.group(0)) :] and name == names[-1]
            spans = last and _admits_slash(by_name.get(name))
            pattern += f"(?P<{name}>.+)" if spans else f"(?P<{name}>[^/]+)"
            position = found.end()
        pattern += re.escape(path[position:])
        return re.compile(pattern)


def _split(json_pointer: str) -> list[str]:
    return [s.replace("~1", "/").replace("~0", "~") for s in json_pointer.lstrip("/").split("/")]


def _admits_slash(parameter: Parameter | None) -> bool:
    """A trailing id with no pattern (or one that mentions ``/``) may contain slashes."""
    if parameter is None:
        return False
    pattern = parameter.schema.get("pattern")
    return pattern is None or (isinstance(pattern, str) and "/" in pattern)


def _success_status(operation: Mapping[str, Any]) -> int:
    codes = sorted(
        int(code)
        for code in (operation.get("responses") or {})
        if str(code).isdigit() and 200 <= int(code) < 300
    )
    return codes[0] if codes else 200
