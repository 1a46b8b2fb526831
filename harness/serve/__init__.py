"""Served mode (``avatar-sim serve``): the simulated platform on a real port (SIM-8).

One concept per module:

* ``clock_driver``: virtual time follows the scaled wall clock (``sim = (wall - t0) / factor``);
* ``app``: the ASGI wrapper that syncs the clock per request and owns the lifespan tasks;
* ``webhook_sender``: real, signed webhook POSTs with httpx on the dispatcher's async seam;
* ``seeding``: organizations, keys, the admin token and the keys file;
* ``runner``: binds the socket, builds everything and runs uvicorn (imported on demand, since it
  loads the whole facade);
* ``command``: the CLI arguments.
"""

from __future__ import annotations

from harness.serve.app import ServedApp
from harness.serve.clock_driver import WallClockDriver
from harness.serve.seeding import keys_document, seed_organizations, write_keys_file
from harness.serve.webhook_sender import HttpWebhookSender

__all__ = [
    "HttpWebhookSender",
    "ServedApp",
    "WallClockDriver",
    "keys_document",
    "seed_organizations",
    "write_keys_file",
]
