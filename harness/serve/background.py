"""``avatar-sim serve`` in a child process, for a notebook or a script that needs a deployment.

Why a child process and not a thread: the served simulator owns its event loop, its clock
driver and its signal handling, exactly as a user's ``avatar-sim serve`` does; the caller only
speaks HTTP to it (capture, replay, conformance) and reads the keys document it wrote. The
server binds a free port on 127.0.0.1; ``stop`` (or leaving the ``with`` block) ends it with
SIGTERM, as a user would, and kills it if it does not stop in time. The keys file and the log
live in a temporary folder of their own, removed when the block ends: the keys are secrets.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["BackgroundServer", "serve_in_background"]

STARTUP_SECONDS = 30.0
STOP_SECONDS = 10.0


@dataclass
class BackgroundServer:
    """A running served simulator: its process and the keys document it printed."""

    process: subprocess.Popen[bytes]
    keys: dict[str, Any]
    log: Path  # its standard error (removed with its folder when the block ends)

    @property
    def base_url(self) -> str:
        return str(self.keys["base_url"])

    @property
    def admin_token(self) -> str:
        return str(self.keys["admin_token"])

    def api_key(self, organization: int = 0, kind: str = "unrestricted") -> str:
        """A key of the ``organization``-th organization (in the scenario's order)."""
        return str(self.keys["organizations"][organization]["keys"][kind])

    def stop(self) -> int:
        """End the server (SIGTERM, then a kill after ``STOP_SECONDS``); its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_SECONDS)
        return int(self.process.returncode)


@contextmanager
def serve_in_background(
    *,
    scenario: str | Path | None = None,
    time_factor: float | None = 1.0,
    seed: int | None = None,
) -> Iterator[BackgroundServer]:
    """Serve (``scenario``'s configuration, organizations and traffic, if given) on a free
    port of 127.0.0.1, its clock at ``time_factor`` (``None``: a manual clock), until the
    block ends."""
    folder = Path(tempfile.mkdtemp(prefix="avatar-sim-serve-"))
    keys = folder / "keys.json"
    command = [sys.executable, "-m", "harness", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--keys-out", str(keys)]
    command += ["--manual-clock"] if time_factor is None else ["--time-factor", str(time_factor)]
    if scenario is not None:
        command += ["--scenario", str(scenario)]
    if seed is not None:
        command += ["--seed", str(seed)]
    log = folder / "serve.log"
    with log.open("wb") as errors:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
    server = BackgroundServer(process, {}, log)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not keys.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                said = log.read_text(encoding="utf-8", errors="replace")
                raise RuntimeError(f"avatar-sim serve did not start: {said.strip()}")
            time.sleep(0.05)
        server.keys = json.loads(keys.read_text(encoding="utf-8"))
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
