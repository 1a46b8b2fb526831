"""The console's routes: one page that shows a served simulator at work (HAR-30).

Why a page, and why this one: an SDK developer pointing an app at ``avatar-sim serve`` asks why
a session failed, why a create got 429, whether the webhook went out. The answers are all behind
``/_sim`` and ``/v1``; the page reads them there, and nothing else: it keeps no state of its own
on the server and the server keeps none for it.

What it is made of, and why:

* three static files shipped in the package (``static/``: HTML, script, style, and an icon), read
  once when the routes are built and served from memory: nothing is fetched from outside the
  package, so it works offline and from a wheel;
* the page, its assets and nothing else are public; everything the page shows comes from the
  admin routes, which need the admin token the page asks for and keeps in its memory only;
* every answer here carries a strict Content-Security-Policy (no inline script or style, no other
  origin, Trusted Types required, so no HTML sink can take a string) and ``nosniff``: markup that
  reached the simulator through the API can never run in the page (HAR-32);
* ``GET /_sim/served`` (behind the token) says what only served mode knows: the time factor, and
  how long a key's non-secret handle is, so the page can filter by key without sending a key.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from importlib.resources import files
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from harness.serve.console import CONSOLE_PATH
from sim.accounts import KEY_ID_LENGTH
from sim.asgi.admin import admin_only
from sim.asgi.envelope import json_response

__all__ = ["CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "console_routes"]

CONTENT_SECURITY_POLICY: Final = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "font-src 'none'",
        "object-src 'none'",
        "frame-src 'none'",
        "worker-src 'none'",
        "manifest-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    )
)

SECURITY_HEADERS: Final[Mapping[str, str]] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}

#: The files of ``static/`` and their media types; the page itself is ``console.html``.
_ASSETS: Final[Mapping[str, str]] = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_PAGE: Final = "console.html"


def _read(name: str) -> bytes:
    return files("harness.serve.console").joinpath("static", name).read_bytes()


def _static(content: bytes, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        return Response(content, media_type=media_type, headers=dict(SECURITY_HEADERS))

    return endpoint


def console_routes(*, token: str, time_factor: float | None) -> list[BaseRoute]:
    """The console's routes, relative to the ``/_sim`` mount: the page and its assets (public),
    and ``/served`` (behind ``token``); ``time_factor`` is ``None`` for a manual clock."""
    prefix = CONSOLE_PATH.removeprefix("/_sim")
    served = {
        "time_factor": time_factor,
        "manual_clock": time_factor is None,
        "console": CONSOLE_PATH,
        "key_id_length": KEY_ID_LENGTH,
    }

    async def served_mode(request: Request) -> Response:
        return json_response(served, 200, SECURITY_HEADERS)

    routes: list[BaseRoute] = [
        Route(prefix, _static(_read(_PAGE), "text/html; charset=utf-8"), methods=["GET"]),
        Route("/served", admin_only(token, served_mode), methods=["GET"]),
    ]
    routes += [
        Route(f"{prefix}/{name}", _static(_read(name), media), methods=["GET"])
        for name, media in _ASSETS.items()
    ]
    return routes
