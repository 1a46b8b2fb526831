"""Run the simulated platform on a real port with uvicorn (``avatar-sim serve``, SIM-8).

Why it is put together this way:

* The socket is bound before the platform is built, so ``--port 0`` yields a known free port and
  the platform's ``public_base_url`` (used in ``download_url``) names the real address.
* The keys document is printed and written only once uvicorn reports it is listening, so a parent
  process can wait for the file and then connect without racing the server.
* Everything (requests, the clock driver, webhook deliveries) runs on one asyncio loop; the
  platform is never touched from another thread.
* Shutdown is uvicorn's own signal handling; the lifespan cancels the background tasks. Uvicorn
  re-raises the captured signal once it has shut down; the handlers installed here swallow that
  re-raise, so a SIGTERM or SIGINT ends the process with exit code 0. In-flight requests get
  ``graceful_timeout`` wall seconds, then are cancelled: a client that never finishes sending its
  body cannot hold the server up.
* The listening socket has ``TCP_NODELAY`` (see ``bind``); logging goes to stderr, the facade's
  500s included, and uvicorn's access log is opt-in (``--access-log``).
* The console (``harness.serve.console``) is mounted with the admin routes, and the pool is
  sampled on the simulated clock from the start, so its chart covers what happened before the
  page was opened.
"""

from __future__ import annotations

import asyncio
import copy
import signal
import socket
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, Literal

import uvicorn
from uvicorn.config import LOGGING_CONFIG

from harness.runner.engine import install
from harness.scenarios.model import Scenario
from harness.serve.app import ServedApp
from harness.serve.clock_driver import WallClockDriver, wall_now
from harness.serve.console.routes import console_routes
from harness.serve.seeding import (
    SEEDING_SECONDS,
    format_keys,
    keys_document,
    new_admin_token,
    organization_record,
    seed_assets,
    seed_organizations,
    write_keys_file,
)
from harness.serve.webhook_sender import HttpWebhookSender
from sim.asgi.app import create_app
from sim.asgi.context import FACADE_LOGGER
from sim.config import SimConfig
from sim.platform import Platform

__all__ = ["ServeOptions", "ServedSimulator", "bind", "build", "log_config", "serve"]

STARTUP_WAIT_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 0
    time_factor: float | None = 1.0  # None: manual clock
    keys_out: Path | None = None
    seed: int | None = None  # None: the scenario's seed, else 0
    log_level: str = "warning"
    access_log: bool = False  # uvicorn's one line per request, on stdout
    graceful_timeout: int = 5  # wall seconds in-flight requests get once a stop is asked
    api_log_size: int | Literal["all"] | None = None  # None: the scenario's or the default
    epoch: datetime | None = None  # the simulated instant serving starts at; None: the wall clock
    # The pool sampler wakes the clock driver at most this often (wall seconds), however fast
    # the clock: at factor 0.002 a 5 s grid would wake it a hundred times a second.
    pool_sample_wall_seconds: float = 1.0
    scenario: Scenario | None = None  # its config, organizations and traffic
    config: SimConfig | None = None  # the configuration without a scenario; None: the default


@dataclass(frozen=True, slots=True)
class ServedSimulator:
    """Everything ``serve`` runs: the platform, the wrapped app and what to print."""

    platform: Platform
    app: ServedApp
    document: dict[str, object]


def bind(host: str, port: int) -> socket.socket:
    """The listening socket: TCP with ``TCP_NODELAY``, which accepted connections inherit.

    The protocol is named explicitly: asyncio sets ``TCP_NODELAY`` only on transports whose
    socket says ``IPPROTO_TCP``, and a socket made with protocol 0 (the default) let Nagle's
    algorithm hold every response body until the client's delayed ACK, about 40 ms per request
    on a kept-alive connection.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1" if host == "0.0.0.0" else "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _with_log_size(config: SimConfig, size: int | Literal["all"] | None) -> SimConfig:
    """``config`` with the API log ring ``--api-log-size`` asked for ("all": unbounded)."""
    if size is None:
        return config
    history = config.history.model_copy(update={"api_log_size": None if size == "all" else size})
    return config.model_copy(update={"history": history})


def build(options: ServeOptions, base_url: str) -> ServedSimulator:
    """Build the platform, seed it and wrap the facade for serving (no I/O, no loop needed).

    Serving starts at the wall-clock start (whole seconds, UTC) unless ``options.epoch`` fixes
    it, so that at factor 1 the timestamps and ``X-RateLimit-Reset`` match real time. The signed
    ``webhook-timestamp`` is the wall-clock moment of each attempt at any factor, so webhook
    receivers can check their tolerance. Without a scenario the organizations and their assets
    are made in the ``SEEDING_SECONDS`` before that instant (the platform's epoch); a scenario
    starts at it.
    """
    start = options.epoch or datetime.now(UTC).replace(microsecond=0)
    scenario = options.scenario
    if scenario is None:
        base = options.config or SimConfig()
        served: dict[str, Any] = {
            "public_base_url": base_url,
            "epoch": start - timedelta(seconds=SEEDING_SECONDS),
            "seed": options.seed if options.seed is not None else base.seed,
        }
        config = _with_log_size(base.model_copy(update=served), options.api_log_size)
        platform = Platform.create(config)
        organizations = seed_organizations(platform.admin)
        seed_assets(platform, organizations)
    else:
        served = {"public_base_url": base_url, "epoch": start}
        # The scenario's configuration, organizations and traffic: its arrivals and runs are
        # processes on the platform's clock, so they unfold as the served clock advances.
        config = _with_log_size(
            scenario.sim_config(options.seed).model_copy(update=served), options.api_log_size
        )
        platform = Platform.create(config)
        installed = install(platform, scenario)
        organizations = [organization_record(account) for account in installed.accounts]
    admin_token = new_admin_token()
    # The console's page and its reads: the pool against time needs a sampler on the clock.
    admin = platform.config.admin
    platform.admin.sample_pool(_sample_every(options, config), admin.pool_samples_kept)
    console = console_routes(token=admin_token, time_factor=options.time_factor)
    facade = create_app(platform, admin_token=admin_token, admin_extras=console)
    driver = (
        WallClockDriver(platform.clock, options.time_factor)
        if options.time_factor is not None
        else None
    )

    def settle() -> None:
        # A reported webhook attempt resumes its delivery "now": process it at once (at the
        # wall-mapped time when the clock is driven) and let the driver see any retry it set.
        if driver is None:
            platform.clock.advance(0)
            return
        driver.sync_safely()
        driver.poke()

    sender = HttpWebhookSender()
    sender.attach(platform.webhooks, on_reported=settle)
    # Signed at the real moment of each attempt, whatever the time factor or a manual clock, so a
    # receiver's tolerance check passes; the payloads keep their simulated times.
    platform.webhooks.use_signing_clock(wall_now)
    app = ServedApp(facade, driver, background=(sender.run,), closers=(sender.aclose,))
    document = keys_document(admin_token, base_url, organizations)
    return ServedSimulator(platform=platform, app=app, document=dict(document))


def _sample_every(options: ServeOptions, config: SimConfig) -> float:
    """Simulated seconds between two readings of the pool: the configured grid, stretched on a
    fast clock so that readings stay at least ``pool_sample_wall_seconds`` of wall time apart."""
    every = config.admin.pool_sample_seconds
    if options.time_factor is None:
        return every
    return max(every, options.pool_sample_wall_seconds / options.time_factor)


def log_config(level: str, *, access_log: bool) -> dict[str, Any]:
    """uvicorn's logging set-up plus the facade's logger (``avatar_sim``), all on stderr.

    The facade logs every 500 with its traceback and request id; without a handler of its own
    that record would reach nobody in served mode. The access log, when asked for, is printed at
    INFO whatever ``level`` says, so ``--access-log`` alone is enough to see it.
    """
    config = copy.deepcopy(LOGGING_CONFIG)
    name = level.upper()
    loggers = config["loggers"]
    loggers["uvicorn.error"] = {"level": name}
    loggers["uvicorn.access"] = {"handlers": ["access"], "level": "INFO", "propagate": False}
    loggers[FACADE_LOGGER] = {"handlers": ["default"], "level": name, "propagate": False}
    return config


class _StopRequests:
    """Signal handlers that stand in for the defaults while (and after) uvicorn serves."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.server: uvicorn.Server | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)
        if self.server is not None:  # a signal before uvicorn installed its own handlers
            self.server.should_exit = True

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self)


async def _serve(
    server: uvicorn.Server, sock: socket.socket, simulator: ServedSimulator, keys_out: Path | None
) -> None:
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + STARTUP_WAIT_SECONDS
    while not server.started:
        if serving.done() or loop.time() > deadline:
            break
        await asyncio.sleep(0.01)
    if server.started:
        document = simulator.document
        print(format_keys(document), flush=True)
        if keys_out is not None:
            write_keys_file(keys_out, document)
    await serving


def serve(options: ServeOptions) -> int:
    """Serve until SIGINT/SIGTERM: 0 on a clean shutdown, 1 if the server failed to start,
    2 if the address cannot be bound (a usage error: the port is taken or the host unknown)."""
    try:
        sock = bind(options.host, options.port)
    except OSError as exc:
        print(
            f"avatar-sim serve: cannot listen on {options.host}:{options.port}: {exc}",
            file=sys.stderr,
        )
        return 2
    base_url = _base_url(sock)
    simulator = build(options, base_url)
    stop = _StopRequests()
    stop.install()
    config = uvicorn.Config(
        simulator.app,
        lifespan="on",
        log_config=log_config(options.log_level, access_log=options.access_log),
        log_level=None,
        access_log=options.access_log,
        server_header=False,
        date_header=False,
        # A client that stops half-way through a body would otherwise hold SIGTERM forever.
        timeout_graceful_shutdown=options.graceful_timeout,
    )
    server = uvicorn.Server(config)
    stop.server = server
    try:
        asyncio.run(_serve(server, sock, simulator, options.keys_out))
    except SystemExit as exc:  # uvicorn exits when the lifespan startup fails
        print(f"avatar-sim serve: the server did not start ({exc.code})", file=sys.stderr)
        return 1
    finally:
        sock.close()
    return 0 if server.started else 1
