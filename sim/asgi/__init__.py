"""The HTTP facade: the one subpackage of ``sim`` that speaks HTTP (Starlette).

``create_app(platform)`` serves exactly the operations of ``spec/openapi.yaml`` under ``/v1``, the
contract documents and their docs page outside it, and the simulator controls under ``/_sim``; it
parses, calls ``Platform.call`` once and serialises.

``create_app`` is imported on first use: the contract tooling imports ``sim.asgi.openapi`` (the
spec loader) and should not pay for Starlette, the validators and the routing table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.asgi.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from sim.asgi.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
