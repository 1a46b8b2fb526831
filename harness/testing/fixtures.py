"""The plugin's fixtures for state-transition suites: ``sim_admin``, ``session_events`` and
``play_audio``, and the ``--avatar-sim-admin-token`` switch.

Why here and not with ``api_client``: the base fixtures (``harness.conformance.fixtures``)
give a client and a simulator; these give what a lifecycle test does besides calling ``/v1``
(move time, play audio, inject faults) and what it reads besides the resource (the events with
their reasons). In process they drive the test's own ``sim_platform``; with
``--avatar-sim-base-url`` they drive a served simulator through ``/_sim`` when its admin token is
given, and a test that needs them is skipped against a deployment without one, saying so.

``bind_api_client`` is called by the plugin once ``api_client`` exists, so ``wait_for`` and
``session_events`` know how time passes for it. Nothing heavy is imported until a fixture runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from harness.testing.admin import HttpAdmin, InProcessAdmin, SimAdmin
from harness.testing.target import UrlTarget, bind, in_process_target

if TYPE_CHECKING:
    from harness.testing.events import SessionHistory

__all__ = [
    "ADMIN_TOKEN_OPTION",
    "add_options",
    "admin_token",
    "bind_api_client",
    "check_options",
    "play_audio",
    "session_events",
    "sim_admin",
]

ADMIN_TOKEN_OPTION = "--avatar-sim-admin-token"
_BASE_URL_DEST = "avatar_sim_base_url"
_OURS = "harness.conformance.fixtures"  # where the plugin's api_client is defined


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("avatar-sim", "avatar-sim")
    group.addoption(
        ADMIN_TOKEN_OPTION,
        dest="avatar_sim_admin_token",
        default=None,
        metavar="TOKEN",
        help="the /_sim admin token of the served simulator at --avatar-sim-base-url: gives "
        "the sim_admin and play_audio fixtures and session_events' reasons there (tests "
        "that need sim_admin skip without it); wait_for then counts simulated seconds",
    )


def check_options(config: pytest.Config) -> None:
    """An admin token without a base URL is a usage error (in process there is no token)."""
    if admin_token(config) and not config.getoption(_BASE_URL_DEST, default=None):
        raise pytest.UsageError(f"{ADMIN_TOKEN_OPTION} needs --avatar-sim-base-url")


def admin_token(config: pytest.Config) -> str | None:
    value = config.getoption("avatar_sim_admin_token", default=None)
    return str(value) if value else None


def bind_api_client(fixturedef: Any, request: pytest.FixtureRequest, client: Any) -> None:
    """Bind the plugin's ``api_client`` to its target (``harness.testing.target``): the test's
    ``sim_platform`` in process, the base URL (with its admin API when the token is given)
    otherwise. A project's own fixture named ``api_client`` is left alone."""
    if fixturedef.argname != "api_client" or not isinstance(client, httpx.Client):
        return
    if getattr(fixturedef.func, "__module__", None) != _OURS:
        return
    url = request.config.getoption(_BASE_URL_DEST, default=None)
    if not url:
        bind(client, in_process_target(request.getfixturevalue("sim_platform")))
        return
    token = admin_token(request.config)
    admin = HttpAdmin(str(url), token) if token else None
    if admin is not None:
        request.addfinalizer(admin.close)
    bind(client, UrlTarget(str(url), admin))


@pytest.fixture
def sim_admin(request: pytest.FixtureRequest) -> Iterator[SimAdmin]:
    """The simulator's controls (``harness.testing.SimAdmin``): clock, audio, barge-in, faults,
    capacity, organizations, webhooks. In process on ``sim_platform``; against
    ``--avatar-sim-base-url`` through ``/_sim`` with ``--avatar-sim-admin-token`` (skipped
    without). What a test changes for everyone (the pool, a slow start-up) is restored after it.

    Example::

        def test_queued_session_fails_without_capacity(api_client, sim_admin):
            sim_admin.set_capacity(0)
            ...
    """
    url = request.config.getoption(_BASE_URL_DEST, default=None)
    admin: SimAdmin
    if url:
        token = admin_token(request.config)
        if not token:
            pytest.skip(
                f"needs the simulator's admin API: {url} was given without {ADMIN_TOKEN_OPTION} "
                "(a deployment has none)"
            )
        admin = HttpAdmin(str(url), token)
    else:
        admin = InProcessAdmin(request.getfixturevalue("sim_platform"))
    try:
        yield admin
    finally:
        try:
            admin.restore()
        finally:
            admin.close()


@pytest.fixture
def session_events(api_client: httpx.Client) -> Callable[..., SessionHistory]:
    """``session_events(session_id, webhooks=None)``: the session's lifecycle events with their
    reasons and times, from the event log (in process, or a served simulator with its admin
    token), the ``webhooks`` a ``WebhookReceiver`` collected, or ``GET /v1/sessions/{id}``;
    ``.source`` says which.

    Example::

        def test_idle(api_client, session_events):
            ...
            assert session_events(session_id).final.reason == "idle_timeout"
    """
    from harness.testing.events import session_events as read

    return partial(read, api_client)


@pytest.fixture
def play_audio(sim_admin: SimAdmin) -> Callable[..., dict[str, Any]]:
    """``play_audio(session_id, kind="speech", seconds=5.0)``: the client publishes audio into
    a running session (the idle timer counts from its end); answers the session. Needs
    ``sim_admin`` (skipped against a deployment).

    Example::

        def test_talking_keeps_it_alive(api_client, play_audio):
            ...
            play_audio(session_id, "speech", seconds=20)
    """
    return sim_admin.play_audio
