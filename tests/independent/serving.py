"""Building and serving the service, in-process or on a real port.

:func:`create_app` gives the ASGI app and its credentials for ``httpx.ASGITransport``;
:func:`serve` runs it under uvicorn in a background thread on a free port and yields the same
credentials, with the real ``base_url``, stopping the server cleanly on exit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette

from .app import build_app
from .clock import Clock, ScaledClock
from .faults import FaultSet
from .readings import READINGS
from .service import Service

PLACEHOLDER_BASE = "http://testserver"


def create_app(
    reading: str = "a",
    faults: Iterable[str] = (),
    time_factor: float = 1.0,
    workers: int = 8,
    *,
    clock: Clock | None = None,
) -> tuple[Starlette, dict[str, Any]]:
    """The app and its credentials; ``clock`` overrides the scaled clock (tests only)."""
    if reading not in READINGS:
        raise KeyError(f"unknown reading {reading!r}; choose one of {', '.join(READINGS)}")
    service = Service(
        READINGS[reading], FaultSet(faults), clock or ScaledClock(time_factor), workers
    )
    app = build_app(service)
    return app, service.credentials(PLACEHOLDER_BASE)


class ServerThread:
    """uvicorn.Server on its own thread and event loop."""

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            http="h11",
            loop="asyncio",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="independent-api", daemon=True)
        self.host = host

    def start(self, timeout: float = 15.0) -> int:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        sockets = [s for server in self.server.servers for s in server.sockets]
        return int(sockets[0].getsockname()[1])

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)


@contextmanager
def serve(
    reading: str = "a",
    faults: Iterable[str] = (),
    time_factor: float = 1.0,
    workers: int = 8,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[dict[str, Any]]:
    app, credentials = create_app(reading, faults, time_factor, workers)
    server = ServerThread(app, host, port)
    bound = server.start()
    try:
        yield {**credentials, "base_url": f"http://{host}:{bound}"}
    finally:
        server.stop()
