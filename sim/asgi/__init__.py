"""The HTTP facade: the one subpackage of ``sim`` that speaks HTTP (Starlette).

``create_app(platform)`` serves exactly the operations of ``spec/openapi.yaml`` under ``/v1`` and
the simulator controls under ``/_sim``; it parses, calls ``Platform.call`` once and serialises.
"""

from __future__ import annotations

from sim.asgi.app import create_app

__all__ = ["create_app"]
