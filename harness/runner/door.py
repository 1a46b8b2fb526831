"""The door a scenario's clients knock on: ``Platform.call`` itself, or the HTTP facade.

Why a seam: the runner's clients speak in contract operations (``createSession`` with its
parameters). Sweeps want the direct Python door, which is fast; the demo wants the scenario to
travel through the real HTTP facade, request by request, as a customer's traffic would. Both
doors answer the same ``Outcome`` or raise the same ``DomainError`` (SIM-7 proves the facade and
``Platform.call`` agree), so the clients never know which one they have.

Why the HTTP door lives in its own module (``harness.runner.http_door``): it imports the ASGI
facade, and with it httpx, Starlette and the JSON Schema validators, which a scenario run that
calls ``Platform.call`` directly should not pay for at start-up.
"""

from __future__ import annotations

from typing import Protocol

from sim.accounts import Caller
from sim.platform import Outcome, Params

__all__ = ["Door"]


class Door(Protocol):
    """What the clients need of the service: ``Platform.call``'s signature."""

    def call(
        self, operation_id: str, caller: Caller | None, params: Params, *, reads_body: bool = True
    ) -> Outcome:
        """``reads_body=False``: the client reads no more of the body than its ``id``, so the
        door may answer just that (``Platform.call`` skips rendering what nobody reads)."""
        ...
