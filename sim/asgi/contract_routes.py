"""The contract, served: the OpenAPI documents and a browsable docs page, outside ``/v1``.

Why: a developer pointed at ``avatar-sim serve`` should get the contract from the server itself
(``openapi-python-client generate --url …/openapi.json``, ``schemathesis run …/openapi.json``, a
browser on ``/docs``) rather than hunt for a file of the right version. Routes:

- ``GET /openapi.json``, ``GET /openapi.yaml``: the simulator's document (the one the app routes
  by), JSON for tools, YAML as written;
- ``GET /contract/openapi.json``, ``GET /contract/openapi.yaml``: the contract profile, the seed's
  contract without the simulator's gap choices (what any deployment is held to);
- ``GET /docs``: Swagger UI over both documents, its assets served from the ``swagger-ui-py``
  package under ``/docs/static``. Nothing is fetched from the network at run time: the page
  names only same-origin URLs and turns off Swagger UI's online validator badge.

They are public (no key), read-only, and the same in-process and on a port (spec/DECISIONS.md,
GAP-SERVE-2). The documents are rendered once, when the app is built.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import cache
from http import HTTPMethod
from typing import Any, Final

import yaml
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from sim.asgi.openapi import OPENAPI_FILE, PROFILE_FILE, default_spec_dir, load_yaml

__all__ = ["DOCS_PATH", "PROFILE_PREFIX", "ServedDocument", "contract_routes"]

#: Where the contract profile is served (the simulator's document is at the root).
PROFILE_PREFIX: Final = "/contract"
#: The docs page; its assets are under ``{DOCS_PATH}/static``.
DOCS_PATH: Final = "/docs"

_JSON: Final = "application/json"
_YAML: Final = "application/yaml"
_READ_METHODS: Final = ("GET", "HEAD")


@dataclass(frozen=True, slots=True)
class ServedDocument:
    """One OpenAPI document as served: its JSON and YAML texts."""

    json_text: str
    yaml_text: str

    @classmethod
    def of(cls, document: Mapping[str, Any], yaml_text: str | None = None) -> ServedDocument:
        """``document`` rendered; ``yaml_text`` (the file as written) is served when given."""
        as_json = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
        if yaml_text is None:
            yaml_text = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True)
        return cls(as_json, yaml_text)


@cache
def _from_spec_dir(name: str) -> ServedDocument:
    path = default_spec_dir() / name
    return ServedDocument.of(load_yaml(path), path.read_text(encoding="utf-8"))


def _read_only(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
    """A ``GET`` route whose path answers every other method with 405 and ``Allow``.

    Starlette would pass a wrong method on to the next route that matches the path in full, and
    the operations app behind these routes matches every path, so ``POST /openapi.json`` would
    answer 404 as if the document did not exist.
    """

    async def only_get(request: Request) -> Response:
        if request.method not in _READ_METHODS:
            raise HTTPException(405, headers={"Allow": ", ".join(_READ_METHODS)})
        return await endpoint(request)

    return Route(path, only_get, methods=[method.value for method in HTTPMethod])


def _document_routes(prefix: str, served: ServedDocument) -> list[BaseRoute]:
    async def as_json(request: Request) -> Response:
        return Response(served.json_text, media_type=_JSON)

    async def as_yaml(request: Request) -> Response:
        return Response(served.yaml_text, media_type=_YAML)

    return [
        _read_only(f"{prefix}/openapi.json", as_json),
        _read_only(f"{prefix}/openapi.yaml", as_yaml),
    ]


_DOCS_PAGE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>avatar-sim: the Realtime Avatar and Model-Run API</title>
  <link rel="stylesheet" href="{static}/swagger-ui.css">
  <link rel="icon" type="image/png" href="{static}/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{static}/swagger-ui-bundle.js"></script>
  <script src="{static}/swagger-ui-standalone-preset.js"></script>
  <script>
    window.onload = function () {{
      window.ui = SwaggerUIBundle({{
        urls: [
          {{url: "/openapi.json", name: "avatar-sim (the simulator's contract)"}},
          {{url: "{profile}/openapi.json", name: "contract profile (any deployment)"}}
        ],
        dom_id: "#swagger-ui",
        deepLinking: true,
        validatorUrl: null,
        presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
        layout: "StandaloneLayout"
      }});
    }};
  </script>
</body>
</html>
"""


def _docs_routes() -> list[BaseRoute]:
    static = f"{DOCS_PATH}/static"
    page = _DOCS_PAGE.format(static=static, profile=PROFILE_PREFIX)

    async def docs(request: Request) -> Response:
        return HTMLResponse(page)

    return [
        _read_only(DOCS_PATH, docs),
        Mount(static, app=StaticFiles(packages=[("swagger_ui", "static")])),
    ]


def contract_routes(spec: Mapping[str, Any] | None = None) -> list[BaseRoute]:
    """The routes serving the contract; ``spec`` is the app's document (default: the project's)."""
    simulator = _from_spec_dir(OPENAPI_FILE) if spec is None else ServedDocument.of(spec)
    return [
        *_document_routes("", simulator),
        *_document_routes(PROFILE_PREFIX, _from_spec_dir(PROFILE_FILE)),
        *_docs_routes(),
    ]
