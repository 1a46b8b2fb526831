"""Tools for pytest suites about state transitions that run the same in process and by URL.

``wait_for`` (and ``wait_for_run``, ``wait_for_avatar``, ``wait_for_delivery``) waits for a
status, running the virtual clock in process and polling by URL, and ``pass_time`` lets time pass
the same way; ``create_session`` creates politely (waiting out rate limits), ``expect_error`` and
``retry_after`` read refusals, and ``SessionTracker`` ends what a test created;
``session_events`` gives a session's lifecycle events with their reasons and times, saying where
they came from; ``SimAdmin`` (the ``sim_admin`` fixture) drives the simulator's audio, faults,
capacity, clock and webhooks; ``SessionMachine`` is a hypothesis state machine over the session
lifecycle with the seed's invariants; and ``WebhookReceiver`` is a real Standard Webhooks receiver
(in process too, the simulator delivers for real). The pytest plugin's fixtures live in
``harness.testing.fixtures``; the reference page (``docs/testing-reference.md``) lists them all.

Names are imported on first use, so loading the pytest plugin (which imports this package)
costs a project that does not use them nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import LazyNames

if TYPE_CHECKING:
    from harness.target import (
        InProcessTarget,
        Target,
        UnknownTarget,
        UrlTarget,
        bind,
        target_of,
    )
    from harness.testing.admin import AdminRefused, InProcessAdmin, SimAdmin
    from harness.testing.audio import play_audio
    from harness.testing.events import LifecycleEvent, NoWebhooks, SessionHistory, session_events
    from harness.testing.fixtures import Organization
    from harness.testing.http_admin import HttpAdmin
    from harness.testing.machine import SessionMachine
    from harness.testing.receiver import ReceivedAttempt, WebhookReceiver
    from harness.testing.serving import SimTarget
    from harness.testing.sessions import SessionTracker, create_session, expect_error, retry_after
    from harness.testing.statuses import UnknownStatus
    from harness.testing.waiting import (
        StateNotReached,
        pass_time,
        wait_for,
        wait_for_avatar,
        wait_for_delivery,
        wait_for_run,
    )

__all__ = [
    "AdminRefused",
    "HttpAdmin",
    "InProcessAdmin",
    "InProcessTarget",
    "LifecycleEvent",
    "NoWebhooks",
    "Organization",
    "ReceivedAttempt",
    "SessionHistory",
    "SessionMachine",
    "SessionTracker",
    "SimAdmin",
    "SimTarget",
    "StateNotReached",
    "Target",
    "UnknownStatus",
    "UnknownTarget",
    "UrlTarget",
    "WebhookReceiver",
    "bind",
    "create_session",
    "expect_error",
    "pass_time",
    "play_audio",
    "retry_after",
    "session_events",
    "target_of",
    "wait_for",
    "wait_for_avatar",
    "wait_for_delivery",
    "wait_for_run",
]

_NAMES = LazyNames(
    __name__,
    {
        "harness.target": (
            "InProcessTarget",
            "Target",
            "UnknownTarget",
            "UrlTarget",
            "bind",
            "target_of",
        ),
        "admin": ("AdminRefused", "InProcessAdmin", "SimAdmin"),
        "audio": ("play_audio",),
        "events": ("LifecycleEvent", "NoWebhooks", "SessionHistory", "session_events"),
        "fixtures": ("Organization",),
        "http_admin": ("HttpAdmin",),
        "machine": ("SessionMachine",),
        "receiver": ("ReceivedAttempt", "WebhookReceiver"),
        "serving": ("SimTarget",),
        "sessions": ("SessionTracker", "create_session", "expect_error", "retry_after"),
        "statuses": ("UnknownStatus",),
        "waiting": (
            "StateNotReached",
            "pass_time",
            "wait_for",
            "wait_for_avatar",
            "wait_for_delivery",
            "wait_for_run",
        ),
    },
)


__getattr__ = _NAMES.load
__dir__ = _NAMES.names
