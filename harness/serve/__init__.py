"""Served mode (``avatar-sim serve``): the simulated platform on a real port (SIM-8).

The pieces, one concept each: ``clock_driver`` (virtual time follows the scaled wall clock),
and, as they land, the ASGI wrapper that syncs the clock per request, the seeding of
organizations and keys, the real webhook sender and the uvicorn runner.
"""

from __future__ import annotations

from harness.serve.clock_driver import WallClockDriver

__all__ = ["WallClockDriver"]
