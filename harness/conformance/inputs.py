"""What only the user can give a conformance run (``Inputs``), the run create it settles on
(``RunPlan``), and the create body's fixed parts every reading of the seed accepts.

Why apart from the context: the command line builds ``Inputs`` and the scripts read the
transport; neither needs the run's state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.conformance.responses import DEFAULT_WORKER_TOKEN

__all__ = ["DEFAULT_TRANSPORT", "QUALITIES", "Inputs", "RunPlan"]

#: A livekit transport with every field the seed lists for a request. The room server does not
#: exist (``.invalid`` never resolves); ``--transport-json`` gives a real one.
DEFAULT_TRANSPORT: Mapping[str, Any] = {
    "type": "livekit",
    "url": "wss://conformance.invalid",
    "room_name": "conformance",
    "worker_token": DEFAULT_WORKER_TOKEN,
    "audio_source": "data_stream",
}

#: The seed's quality tiers, cheapest first.
QUALITIES = ("mock", "lite", "standard", "pro")


@dataclass(frozen=True, slots=True)
class Inputs:
    """What only the user can give, and the longest single wait (wall seconds) they allow."""

    transport: Mapping[str, Any] | None = None
    avatar_id: str | None = None
    #: ``--model`` (repeatable), each with its run body (``--run-json``: one for every model,
    #: or one each, in order); ``None`` where the body is built from the model's schemas.
    models: tuple[str, ...] = ()
    run_bodies: tuple[Mapping[str, Any] | None, ...] = ()
    max_wait_seconds: float = 180.0

    def body_for(self, model: str) -> Mapping[str, Any] | None:
        """The run body the user gave for ``model`` (``None``: none given)."""
        if model in self.models and len(self.run_bodies) == len(self.models):
            return self.run_bodies[self.models.index(model)]
        return self.run_bodies[0] if len(self.run_bodies) == 1 else None


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A run create the target accepted once: the model and the body to send again."""

    model: str
    body: Mapping[str, Any]

    @property
    def path(self) -> str:
        # The seed: the model id (``<publisher>/<model>``) is the run path segment, sent as is.
        return f"/v1/run/{self.model}"
