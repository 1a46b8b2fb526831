"""The served-mode ASGI wrapper: clock sync per request and lifespan-bound tasks (SIM-8)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from harness.serve.app import ServedApp
from harness.serve.clock_driver import WallClockDriver
from sim.clock import Clock

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class FakeWall:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def _clock_app(clock: Clock) -> Starlette:
    async def now(request: Request) -> JSONResponse:
        return JSONResponse({"seconds": clock.now})

    return Starlette(routes=[Route("/now", now)])


async def _get_seconds(app: ServedApp) -> float:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://sim.test") as client:
        response = await client.get("/now")
    assert response.status_code == 200
    return float(response.json()["seconds"])


@pytest.mark.req("SIM-8", "SIM-1")
def test_every_request_sees_the_clock_synced_to_the_scaled_wall_clock() -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    app = ServedApp(_clock_app(clock), WallClockDriver(clock, factor=0.25, wall=wall))
    wall.now += 2.0
    assert asyncio.run(_get_seconds(app)) == pytest.approx(8.0)
    wall.now += 1.0
    assert asyncio.run(_get_seconds(app)) == pytest.approx(12.0)


@pytest.mark.req("SIM-8")
def test_manual_clock_leaves_time_alone() -> None:
    clock = Clock(EPOCH)
    app = ServedApp(_clock_app(clock), driver=None)
    assert asyncio.run(_get_seconds(app)) == 0.0
    clock.advance(42.0)
    assert asyncio.run(_get_seconds(app)) == 42.0


@pytest.mark.req("SIM-8")
def test_lifespan_starts_and_cancels_background_tasks_and_runs_closers() -> None:
    log: list[str] = []

    async def worker() -> None:
        log.append("started")
        try:
            await asyncio.Event().wait()
        finally:
            log.append("cancelled")

    async def close() -> None:
        log.append("closed")

    app = ServedApp(_clock_app(Clock(EPOCH)), background=(worker,), closers=(close,))

    async def scenario() -> list[dict[str, Any]]:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return await inbox.get()

        async def send(message: Any) -> None:
            sent.append(dict(message))

        lifespan = asyncio.create_task(app({"type": "lifespan"}, receive, send))
        await inbox.put({"type": "lifespan.startup"})
        for _ in range(100):
            if sent and log:
                break
            await asyncio.sleep(0.005)
        assert log == ["started"]
        await inbox.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(lifespan, timeout=2.0)
        return sent

    sent = asyncio.run(scenario())
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert log == ["started", "cancelled", "closed"]
