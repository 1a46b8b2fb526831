"""Helpers for the black-box tests of ``avatar-sim serve``: a served subprocess and a receiver.

Everything binds to 127.0.0.1 only, and every wait is bounded in wall time.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

__all__ = ["Received", "Receiver", "Served", "receiver", "served"]

STARTUP_SECONDS = 30.0
SHUTDOWN_SECONDS = 10.0


class Served:
    """A running ``avatar-sim serve`` process and the keys document it wrote."""

    def __init__(self, process: subprocess.Popen[bytes], keys: dict[str, Any]) -> None:
        self.process = process
        self.keys = keys
        self._output: tuple[bytes, bytes] | None = None

    def output(self) -> tuple[bytes, bytes]:
        """Stdout and stderr, once the process has exited (read once, then kept)."""
        if self._output is None:
            self._output = self.process.communicate(timeout=SHUTDOWN_SECONDS)
        return self._output

    @property
    def base_url(self) -> str:
        return str(self.keys["base_url"])

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['admin_token']}"}

    def org(self, plan: str) -> dict[str, Any]:
        return next(o for o in self.keys["organizations"] if o["plan"] == plan)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=10.0)

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, float]:
        """Send ``sig``; return the exit code and the wall seconds it took to exit."""
        started = time.monotonic()
        self.process.send_signal(sig)
        code = self.process.wait(timeout=SHUTDOWN_SECONDS)
        return code, time.monotonic() - started


@contextmanager
def served(workdir: Path, *options: str) -> Iterator[Served]:
    """Start ``python -m harness serve --port 0 --keys-out F <options>``; wait for the keys file."""
    keys_file = workdir / "keys.json"
    command = [
        sys.executable,
        "-m",
        "harness",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--keys-out",
        str(keys_file),
        *options,
    ]
    process = subprocess.Popen(command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    running = Served(process, {})
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not keys_file.exists():
            if process.poll() is not None:
                _, err = running.output()
                raise AssertionError(f"serve exited with {process.returncode}: {err.decode()}")
            if time.monotonic() > deadline:
                raise AssertionError("serve did not write its keys file in time")
            time.sleep(0.05)
        running.keys = json.loads(keys_file.read_text(encoding="utf-8"))
        yield running
    finally:
        if process.poll() is None:
            process.kill()
        running.output()


@dataclass(frozen=True, slots=True)
class Received:
    headers: dict[str, str]
    body: bytes
    at: float  # time.monotonic() on arrival

    def json(self) -> Any:
        return json.loads(self.body)


class Receiver:
    """A loopback HTTP endpoint that records every POST it gets and answers 204."""

    def __init__(self) -> None:
        self.inbox: queue.Queue[Received] = queue.Queue()
        inbox = self.inbox

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                inbox.put(Received(headers=headers, body=body, at=time.monotonic()))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def wait_for(self, predicate: Any, timeout: float) -> Received:
        """The first received request for which ``predicate(payload)`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("no matching webhook arrived in time")
            try:
                item = self.inbox.get(timeout=remaining)
            except queue.Empty:
                continue
            if predicate(item.json()):
                return item


@contextmanager
def receiver() -> Iterator[Receiver]:
    hooks = Receiver()
    thread = threading.Thread(target=hooks.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hooks
    finally:
        hooks.server.shutdown()
        hooks.server.server_close()
        thread.join(timeout=5)
