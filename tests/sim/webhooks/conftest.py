"""Fixtures for the webhook tests: a kernel, a dispatcher and a scripted sender.

The suite runs in importlib mode, so shared helpers are handed out as fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from sim.config import SimConfig
from sim.kernel import Kernel
from sim.webhooks import WebhookDispatcher, WebhookRequest
from sim.webhooks.sender import SendResult


@dataclass
class ScriptedSender:
    """Answers from ``script`` in order (then ``then``) and records every request."""

    script: list[SendResult] = field(default_factory=list)
    then: SendResult = 200
    requests: list[WebhookRequest] = field(default_factory=list)

    def send(self, request: WebhookRequest) -> SendResult:
        self.requests.append(request)
        return self.script.pop(0) if self.script else self.then


@dataclass
class Hooks:
    kernel: Kernel
    dispatcher: WebhookDispatcher
    sender: ScriptedSender

    def emit(self, type_: str, org_id: str = "org_a", **data: Any) -> str:
        return self.kernel.events.emit(type_, org_id, data).id

    def advance(self, seconds: float) -> None:
        self.kernel.clock.advance(seconds)


def build_hooks(
    script: Iterable[SendResult] = (),
    *,
    then: SendResult = 200,
    seed: int = 11,
    epoch: datetime | None = None,
) -> Hooks:
    config = SimConfig(seed=seed) if epoch is None else SimConfig(seed=seed, epoch=epoch)
    kernel = Kernel.create(config)
    sender = ScriptedSender(list(script), then)
    return Hooks(kernel, WebhookDispatcher(kernel, sender), sender)


@pytest.fixture(scope="session")
def make_hooks() -> Callable[..., Hooks]:
    return build_hooks


@pytest.fixture
def hooks() -> Hooks:
    return build_hooks()
