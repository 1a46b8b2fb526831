"""The real facade over real HTTP inside the test process, for conformance runs against a served
target: what ``avatar-sim serve`` runs, on 127.0.0.1 and a free port, in a thread.

Why in a thread of the test process and not a subprocess (``tests/serve/support.py``): edits are
Python callables (``tests.conformance.edits``), and a test may need the platform itself. The
pieces are ``avatar-sim serve``'s own (``harness.serve.runner.build``, ``ServedApp``,
``WallClockDriver``), so the seeding, the wall clock at ``time_factor`` and the background
tasks are the same; only the edits (or a wrapper) sit between ``ServedApp`` and the facade, so
the clock is synced before an edit reads it.

Threads and loops: uvicorn runs ``asyncio.run`` on its own thread; the platform, the clock driver
and every edit live on that loop. The test thread only speaks HTTP to it, or hands a function to
``Served.on_loop``, which runs it on the loop between requests: never touch ``Served.platform``
directly while the server runs (SimPy is not thread-safe). Every wait is bounded: start-up by
``STARTUP_SECONDS``, a stop by uvicorn's graceful timeout (one second, after which in-flight
requests are cancelled) plus ``STOP_SECONDS``, a call on the loop by ``CALL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import uvicorn

from harness.serve.clock_driver import WallClockDriver
from harness.serve.runner import ServeOptions, bind, build
from harness.target import Credentials, Target
from sim.platform import Platform
from tests.conformance.edits import App, Edited, Edits, Keys
from tests.conformance.support import configured

__all__ = ["Listening", "Served", "Wrap", "served", "served_app"]

#: ``wrap(app, keys)``: an ASGI app around the (edited) facade; ``keys`` as an edit sees them.
Wrap = Callable[[App, Keys], App]
T = TypeVar("T")

HOST = "127.0.0.1"
STARTUP_SECONDS = 10.0
STOP_SECONDS = 5.0
CALL_SECONDS = 10.0
GRACEFUL_SECONDS = 1  # uvicorn's own bound on in-flight requests once a stop is asked


def _url(sock: socket.socket) -> str:
    return f"http://{HOST}:{sock.getsockname()[1]}"


class _Server:
    """uvicorn serving ``app`` on a fresh loop in a daemon thread, bound before it starts."""

    def __init__(self, app: Any, lifespan: str, sock: socket.socket) -> None:
        self.sock = sock
        port = sock.getsockname()[1]
        self.base_url = _url(sock)
        config = uvicorn.Config(
            app,
            lifespan=lifespan,  # type: ignore[arg-type]
            log_config=None,  # leave the test process's logging alone
            access_log=False,
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
        self.server = uvicorn.Server(config)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"served {port}", daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            await self.server.serve(sockets=[self.sock])

        try:
            asyncio.run(main())
        except BaseException as exc:  # uvicorn exits (SystemExit) when it cannot start
            self.error = exc

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server on {self.base_url} did not start: {self.error!r}")
            time.sleep(0.01)

    def stop(self) -> None:
        """Ask uvicorn to exit; force it if it has not within ``STOP_SECONDS``."""
        self.server.should_exit = True
        self.thread.join(GRACEFUL_SECONDS + STOP_SECONDS)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(STOP_SECONDS)
        self.sock.close()
        if self.thread.is_alive():
            raise RuntimeError(f"the server on {self.base_url} did not stop")

    def on_loop(self, function: Callable[[], T], timeout: float) -> T:
        loop = self.loop
        if loop is None or not self.thread.is_alive():
            raise RuntimeError("the server is not running")

        async def call() -> T:
            return function()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout)


@dataclass(frozen=True)
class Listening:
    """Any ASGI app on a real port."""

    base_url: str
    _server: _Server = field(repr=False)

    def client(self, timeout: float = 10.0) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=timeout)


@dataclass(frozen=True)
class Served:
    """A served simulator, seeded like ``avatar-sim serve``.

    ``keys`` are the enterprise organization's (``unrestricted``, ``runs_read``, ``runs_write``,
    ``revoked``), ``other_keys`` the starter organization's; each organization has one asset.
    ``admin_token`` is for the test's own use (``/_sim/``); ``credentials()`` leaves it out
    unless asked, as a conformance run against a deployment would be given no such thing.
    """

    base_url: str
    keys: dict[str, str]
    other_keys: dict[str, str]
    admin_token: str
    platform: Platform  # lives on the server's loop: read it through ``on_loop``
    time_factor: float | None  # simulated seconds = wall seconds / factor; None: manual clock
    organizations: list[dict[str, Any]]
    _server: _Server = field(repr=False)
    _driver: WallClockDriver | None = field(repr=False)

    @property
    def other_org_key(self) -> str:
        return self.other_keys["unrestricted"]

    def credentials(self, admin: bool = False) -> Credentials:
        return Credentials(
            api=self.keys["unrestricted"],
            other_org=self.other_org_key,
            runs_read=self.keys["runs_read"],
            runs_write=self.keys["runs_write"],
            revoked=self.keys["revoked"],
            admin=self.admin_token if admin else None,
        )

    def target(self, admin: bool = False, timeout: float = 30.0) -> Target:
        """A conformance ``Target`` by URL, as ``avatar-sim conformance --base-url`` builds it."""
        return Target.url(self.base_url, self.credentials(admin), timeout=timeout)

    def client(self, key: str | None = None, timeout: float = 10.0) -> httpx.Client:
        """A client with ``key`` (default the unrestricted key) as its bearer."""
        bearer = key if key is not None else self.keys["unrestricted"]
        headers = {"Authorization": f"Bearer {bearer}"}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def on_loop(self, function: Callable[[Platform], T], timeout: float = CALL_SECONDS) -> T:
        """``function(platform)``, run on the server's loop between requests."""
        platform = self.platform
        return self._server.on_loop(lambda: function(platform), timeout)

    def sim_seconds(self) -> float:
        """The simulated clock now, synced to the wall clock first as a request would be."""
        driver = self._driver
        return self.on_loop(
            lambda platform: platform.clock.now if driver is None else driver.sync()
        )


@contextmanager
def _running(app: Any, lifespan: str, sock: socket.socket) -> Iterator[_Server]:
    server = _Server(app, lifespan, sock)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def served(
    edits: Edits | None = None,
    *,
    time_factor: float | None = 1.0,
    wrap: Wrap | None = None,
    seed: int = 0,
) -> Iterator[Served]:
    """Serve the facade seeded like ``avatar-sim serve`` with its clock at ``time_factor``
    (``None``: a manual clock moved only through ``/_sim/clock/advance``), behind ``edits``
    (whose ``config`` changes the platform takes, as ``tests.conformance.support.configured``
    reads them) and then ``wrap``; stop it on exit."""
    config = configured(edits.config) if edits is not None else None
    options = ServeOptions(host=HOST, time_factor=time_factor, seed=seed, config=config)
    sock = bind(HOST, 0)  # bound first, as ``serve`` does: download URLs name the real port
    try:
        simulator = build(options, _url(sock))
    except BaseException:
        sock.close()
        raise
    platform = simulator.platform
    organizations: list[dict[str, Any]] = list(simulator.document["organizations"])  # type: ignore[call-overload]
    enterprise, starter = organizations  # ``DEFAULT_ORGANIZATIONS``, in order
    keys, other = dict(enterprise["keys"]), dict(starter["keys"])
    inner: Any = simulator.app.app
    if edits is not None:
        known = {**keys, "other_unrestricted": other["unrestricted"]}
        inner = Edited(inner, known, edits, lambda: platform.clock.now)
    if wrap is not None:
        inner = wrap(inner, keys)
    simulator.app.app = inner
    with _running(simulator.app, "on", sock) as server:
        yield Served(
            base_url=server.base_url,
            keys=keys,
            other_keys=other,
            admin_token=str(simulator.document["admin_token"]),
            platform=platform,
            time_factor=time_factor,
            organizations=organizations,
            _server=server,
            _driver=simulator.app.driver,
        )


@contextmanager
def served_app(app: Any) -> Iterator[Listening]:
    """Serve any ASGI ``app`` (a misbehaving target of one's own) the same way."""
    with _running(app, "auto", bind(HOST, 0)) as server:
        yield Listening(server.base_url, server)
