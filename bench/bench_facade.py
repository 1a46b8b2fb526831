"""Benchmark: in-process requests per second of the facade against a bare Starlette app.

Why: the facade parses and validates every request against the spec, authenticates it and
renders the envelope; this says what that costs. Both apps are driven the same way in the same
run (one ``httpx.AsyncClient`` over ``httpx.ASGITransport``, sequential requests), so transport
and event-loop overhead cancel out and the ratio is the facade's own cost. The bare app answers a
fixed JSON body from one Starlette route and does nothing else.

Three request mixes for the facade: a public read (``GET /v1/status``), an authenticated list
with query parameters (``GET /v1/sessions?limit=…``) and a validated create with an end
(``POST /v1/sessions`` then ``POST /v1/sessions/{id}/end``, which frees the per-key cap; the rate
limit is lifted for the run). Nothing asserts on time: only the ratios mean anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from sim.asgi import create_app
from sim.config import RateLimitConfig, SimConfig
from sim.platform import Platform

__all__ = ["run"]

_BASE = "http://bench"
_SESSION = {
    "avatar_id": "av_stock_mock",
    "transport": {"type": "livekit", "url": "wss://bench.invalid", "room_name": "bench"},
}


def _bare_app() -> Starlette:
    async def status(request: Request) -> JSONResponse:
        return JSONResponse({"object": "status", "status": "operational"})

    return Starlette(routes=[Route("/v1/status", status, methods=["GET"])])


def _platform() -> tuple[Platform, str]:
    defaults = SimConfig()
    limits = defaults.limits.model_copy(
        update={"rate": RateLimitConfig(session_creates_per_window=None)}
    )
    platform = Platform.create(defaults.model_copy(update={"limits": limits}))
    key = platform.admin.create_organization("Bench", "enterprise")["keys"]["unrestricted"]
    return platform, key


async def _rate(send: Callable[[httpx.AsyncClient], Awaitable[int]], app: Any, n: int) -> float:
    """Requests per second of ``n`` sequential calls of ``send`` (after a short warm-up)."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=_BASE) as client:
        for _ in range(max(n // 20, 5)):
            await send(client)
        started = time.perf_counter()
        requests = 0
        for _ in range(n):
            requests += await send(client)
        elapsed = time.perf_counter() - started
    return requests / elapsed if elapsed > 0 else float("inf")


async def _measure(n: int) -> dict[str, Any]:
    platform, key = _platform()
    facade = create_app(platform)
    auth = {"Authorization": f"Bearer {key}"}

    async def status(client: httpx.AsyncClient) -> int:
        response = await client.get("/v1/status")
        assert response.status_code == 200, response.text
        return 1

    async def listing(client: httpx.AsyncClient) -> int:
        response = await client.get("/v1/sessions?limit=10", headers=auth)
        assert response.status_code == 200, response.text
        return 1

    async def create_and_end(client: httpx.AsyncClient) -> int:
        created = await client.post("/v1/sessions", json=_SESSION, headers=auth)
        assert created.status_code == 201, created.text
        ended = await client.post(f"/v1/sessions/{created.json()['id']}/end", headers=auth)
        assert ended.status_code == 200, ended.text
        return 2

    bare = await _rate(status, _bare_app(), n)
    results = {
        "bare_starlette_rps": bare,
        "facade_status_rps": await _rate(status, facade, n),
        "facade_list_rps": await _rate(listing, facade, n),
        "facade_create_end_rps": await _rate(create_and_end, facade, max(n // 2, 1)),
    }
    rounded: dict[str, Any] = {name: round(value, 1) for name, value in results.items()}
    for name in ("status", "list", "create_end"):
        rounded[f"ratio_{name}_vs_bare"] = round(results[f"facade_{name}_rps"] / bare, 3)
    rounded["requests_per_mix"] = n
    return rounded


def run(scale: float) -> dict[str, Any]:
    """Measure with ``400 * scale`` requests per mix; returns rates and facade/bare ratios."""
    return asyncio.run(_measure(max(int(400 * scale), 20)))
