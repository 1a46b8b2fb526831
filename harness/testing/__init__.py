"""Tools for pytest suites about state transitions that run the same in process and by URL.

``wait_for`` (and ``wait_for_run``, ``wait_for_avatar``) waits for a status, running the virtual
clock in process and polling in real time against a URL, and ``pass_time`` lets time pass the
same way; ``session_events`` gives a session's lifecycle events with their reasons and times,
saying where they came from; ``play_audio`` and ``SimAdmin`` (the ``sim_admin`` fixture) drive
the simulator's audio, faults, capacity, clock and webhooks; ``SessionMachine`` is a hypothesis
state machine over the session lifecycle with the seed's invariants, runnable against the
in-process simulator or any base URL; and ``WebhookReceiver`` is a real Standard Webhooks
receiver for tests. The pytest plugin supplies the fixtures ``sim_admin``, ``session_events``
and ``play_audio`` next to ``api_client``.

Names are imported on first use, so loading the pytest plugin (which imports this package)
costs a project that does not use them nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.testing.admin import AdminRefused, HttpAdmin, InProcessAdmin, SimAdmin
    from harness.testing.audio import play_audio
    from harness.testing.events import LifecycleEvent, SessionHistory, session_events
    from harness.testing.machine import SessionMachine
    from harness.testing.receiver import ReceivedAttempt, WebhookReceiver
    from harness.testing.target import (
        InProcessTarget,
        Target,
        UnknownTarget,
        UrlTarget,
        bind,
        target_of,
    )
    from harness.testing.waiting import (
        StateNotReached,
        pass_time,
        wait_for,
        wait_for_avatar,
        wait_for_run,
    )

__all__ = [
    "AdminRefused",
    "HttpAdmin",
    "InProcessAdmin",
    "InProcessTarget",
    "LifecycleEvent",
    "ReceivedAttempt",
    "SessionHistory",
    "SessionMachine",
    "SimAdmin",
    "StateNotReached",
    "Target",
    "UnknownTarget",
    "UrlTarget",
    "WebhookReceiver",
    "bind",
    "pass_time",
    "play_audio",
    "session_events",
    "target_of",
    "wait_for",
    "wait_for_avatar",
    "wait_for_run",
]

_HOMES = {
    "AdminRefused": "admin",
    "HttpAdmin": "admin",
    "InProcessAdmin": "admin",
    "SimAdmin": "admin",
    "play_audio": "audio",
    "LifecycleEvent": "events",
    "SessionHistory": "events",
    "session_events": "events",
    "SessionMachine": "machine",
    "ReceivedAttempt": "receiver",
    "WebhookReceiver": "receiver",
    "InProcessTarget": "target",
    "Target": "target",
    "UnknownTarget": "target",
    "UrlTarget": "target",
    "bind": "target",
    "target_of": "target",
    "StateNotReached": "waiting",
    "pass_time": "waiting",
    "wait_for": "waiting",
    "wait_for_avatar": "waiting",
    "wait_for_run": "waiting",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
