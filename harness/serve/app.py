"""The ASGI wrapper that served mode puts around the facade app (SIM-8).

Why a wrapper and not code in ``sim/asgi``: the facade is the same app in-process and on a port;
only served mode has a wall clock and background work. This wrapper adds exactly that:

* at the start of every HTTP request it syncs the virtual clock to the scaled wall clock, so the
  request sees the state as of "now", and after the request it pokes the driver, because the
  request may have scheduled an earlier timer (a new session's start-up) or jumped the clock;
* it owns the ASGI lifespan: on startup it starts the background tasks (the clock driver, the
  webhook sender's worker) on the server's event loop, and on shutdown it cancels and awaits them
  and runs the registered closers (the webhook HTTP client), so SIGINT/SIGTERM end cleanly.

Everything runs on the event loop's one thread; no thread ever touches the platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from harness.serve.clock_driver import WallClockDriver

__all__ = ["BackgroundTask", "Closer", "ServedApp"]

BackgroundTask = Callable[[], Coroutine[Any, Any, None]]
"""A factory for a long-running coroutine, started at lifespan startup, cancelled at shutdown."""

Closer = Callable[[], Awaitable[None]]
"""An async clean-up run at lifespan shutdown, after the background tasks have stopped."""


class ServedApp:
    """Wraps ``app``: clock sync per request, background tasks bound to the lifespan.

    ``driver`` is ``None`` under ``--manual-clock``: time then moves only through the admin
    endpoint. The inner app's own lifespan is not run (the facade keeps no lifespan state).
    """

    def __init__(
        self,
        app: ASGIApp,
        driver: WallClockDriver | None = None,
        background: tuple[BackgroundTask, ...] = (),
        closers: tuple[Closer, ...] = (),
    ) -> None:
        self.app = app
        self.driver = driver
        self._background = background + ((driver.run,) if driver is not None else ())
        self._closers = closers
        self._tasks: list[asyncio.Task[None]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.driver is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.driver.sync_safely()
        try:
            await self.app(scope, receive, send)
        finally:
            self.driver.poke()

    # -- lifespan --------------------------------------------------------------------------------

    async def startup(self) -> None:
        """Start every background task on the running loop."""
        self._tasks = [asyncio.create_task(factory()) for factory in self._background]
        for task in self._tasks:
            task.add_done_callback(_report_failure)

    async def shutdown(self) -> None:
        """Cancel the background tasks, wait for them, then run the closers."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for close in self._closers:
            await close()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:  # report it to the server, which then exits
                    await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _report_failure(task: asyncio.Task[None]) -> None:
    """A background task that dies (a bug in the domain) must not stop the clock silently."""
    if task.cancelled() or task.exception() is None:
        return
    error = task.exception()
    print(f"avatar-sim serve: background task {task.get_name()} failed:", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr)
