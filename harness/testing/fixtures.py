"""The plugin's fixtures: one suite, in process or by URL, with the same behaviour (HAR-4, HAR-7).

Why one home: a suite written against ``api_client`` runs unchanged in process (fast, on a
virtual clock it can move), against a served simulator (``--avatar-sim-serve``, or
``--avatar-sim-base-url`` with ``--avatar-sim-admin-token``) and against a deployment (the URL and
a key). Every fixture decides here, once, what it is on each target:

* ``sim_platform``, ``sim_clock``, ``sim_org``: the in-process simulator itself (skipped by URL);
* ``api_client``: a client with an unrestricted key, bound to its target so ``wait_for`` and kin
  know how time passes there; the sessions it creates are ended after the test
  (``created_sessions``);
* ``sim_target``: the URL, key, admin token and organization id of the run's target;
* ``sim_admin``, ``fresh_org``, ``play_audio``: the simulator's controls and a new organization
  of the test's own (in process, or by URL with the admin token; skipped on a deployment);
* ``session_events``: a session's lifecycle events with their reasons.

Heavy imports (the facade, the platform) happen inside the fixtures, so loading the plugin costs
a test run nothing when the fixtures are not used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from harness.testing import options
from harness.testing.admin import InProcessAdmin, SimAdmin
from harness.testing.http_admin import HttpAdmin
from harness.testing.serving import SimTarget, avatar_sim_served, resolve
from harness.testing.sessions import SessionTracker

if TYPE_CHECKING:
    from harness.testing.events import SessionHistory
    from sim.clock import Clock
    from sim.platform import Platform

__all__ = [
    "FIXTURES",
    "Organization",
    "api_client",
    "avatar_sim_served",
    "created_sessions",
    "fresh_org",
    "play_audio",
    "session_events",
    "sim_admin",
    "sim_clock",
    "sim_org",
    "sim_platform",
    "sim_target",
]

#: The fixtures the plugin gives (its public ones), for the documentation checks.
FIXTURES = (
    "sim_platform",
    "sim_clock",
    "sim_org",
    "api_client",
    "created_sessions",
    "sim_target",
    "sim_admin",
    "fresh_org",
    "session_events",
    "play_audio",
)


def _require_simulator(request: pytest.FixtureRequest) -> None:
    if options.base_url(request.config) or options.serving(request.config):
        pytest.skip("needs the in-process simulator (this run goes by URL)")


@pytest.fixture
def sim_platform(request: pytest.FixtureRequest) -> Platform:
    """A fresh simulated service (default configuration, seed 0) with a manual clock; its
    webhooks are delivered for real (signed HTTP requests, retried on the virtual clock).

    Example::

        def test_a_minute(sim_platform):
            sim_platform.advance(60)
    """
    _require_simulator(request)
    from harness.testing.delivery import deliver_for_real
    from sim.platform import Platform

    platform = Platform.create()
    deliver_for_real(platform)
    return platform


@pytest.fixture
def sim_clock(sim_platform: Platform) -> Clock:
    """The virtual clock of ``sim_platform``: time moves only on ``advance(seconds)``.

    Example::

        def test_later(sim_clock):
            sim_clock.advance(30)
    """
    return sim_platform.clock


@pytest.fixture
def sim_org(sim_platform: Platform) -> dict[str, Any]:
    """An enterprise organization created through the admin controls: ``{"id", "plan", "keys"}``
    with keys ``unrestricted``, ``runs_read``, ``runs_write`` and ``revoked``.

    Example::

        def test_keys(sim_org):
            assert set(sim_org["keys"]) >= {"unrestricted", "revoked"}
    """
    return sim_platform.admin.create_organization("pytest organization", "enterprise")


@pytest.fixture
def sim_target(request: pytest.FixtureRequest) -> SimTarget:
    """What the run talks to (``harness.testing.SimTarget``): ``kind``, ``base_url``,
    ``api_key``, ``admin_token``, ``org_id``, ``served``.

    Example::

        def test_by_url_only(sim_target):
            if sim_target.kind == "in_process":
                pytest.skip("about HTTP")
    """
    return resolve(request)


@pytest.fixture
def created_sessions() -> Iterator[SessionTracker]:
    """The sessions ``api_client`` and ``fresh_org.client`` created, ended after the test (and
    waited for) so they count against no later test's caps; ``enabled = False`` keeps them.

    Example::

        def test_keep_it(api_client, created_sessions):
            created_sessions.enabled = False
    """
    tracker = SessionTracker()
    yield tracker
    tracker.end_all()


@pytest.fixture
def api_client(
    request: pytest.FixtureRequest, sim_target: SimTarget, created_sessions: SessionTracker
) -> Iterator[httpx.Client]:
    """An httpx client authenticated with an unrestricted key: in process against
    ``sim_platform`` (the organization ``sim_org``), or by URL. The sessions it creates are
    ended after the test.

    Example::

        def test_list(api_client):
            assert api_client.get("/v1/sessions").status_code == 200
    """
    from harness.testing.admin import in_process_client
    from harness.testing.target import url_client

    client: httpx.Client
    admin: HttpAdmin | None = None
    if sim_target.kind == "in_process":
        client = in_process_client(request.getfixturevalue("sim_platform"), sim_target.api_key)
    else:
        assert sim_target.base_url is not None
        if sim_target.admin_token is not None:
            admin = HttpAdmin(sim_target.base_url, sim_target.admin_token)
        client = url_client(sim_target.base_url, sim_target.api_key, admin=admin)
    created_sessions.watch(client)
    with client:
        try:
            yield client
        finally:
            try:
                created_sessions.end_all(client)
            finally:
                if admin is not None:
                    admin.close()


@pytest.fixture
def sim_admin(request: pytest.FixtureRequest, sim_target: SimTarget) -> Iterator[SimAdmin]:
    """The simulator's controls (``harness.testing.SimAdmin``): clock, audio, barge-in, faults,
    capacity, organizations, webhooks. In process on ``sim_platform``; by URL through ``/_sim``
    with the admin token (skipped without). What a test changes for everyone (the pool, the
    queue, a slow start-up, failing purges, webhook endpoints) is restored after it.

    Example::

        def test_queued_session_fails_without_capacity(api_client, sim_admin):
            sim_admin.set_capacity(0)
            ...
    """
    admin: SimAdmin
    if sim_target.kind == "url":
        if sim_target.admin_token is None:
            pytest.skip(
                f"needs the simulator's admin API: {sim_target.base_url} was given without "
                f"{options.ADMIN_TOKEN_OPTION} (a deployment has none)"
            )
        assert sim_target.base_url is not None
        admin = HttpAdmin(sim_target.base_url, sim_target.admin_token)
    else:
        admin = InProcessAdmin(request.getfixturevalue("sim_platform"))
    try:
        yield admin
    finally:
        try:
            admin.restore()
        finally:
            admin.close()


@dataclass(frozen=True, slots=True)
class Organization:
    """A new organization of the test's own (the ``fresh_org`` fixture): its ``id``, ``plan``,
    ``keys`` (``unrestricted``, ``runs_read``, ``runs_write``, ``revoked``) and a ``client``
    with its unrestricted key, bound like ``api_client``.

    Example::

        def test_hooks(fresh_org, sim_admin):
            with WebhookReceiver() as hooks:
                hooks.register(sim_admin, fresh_org.id)
                create_session(fresh_org.client, BODY)
    """

    id: str
    plan: str
    keys: dict[str, str]
    client: httpx.Client


@pytest.fixture
def fresh_org(sim_admin: SimAdmin, created_sessions: SessionTracker) -> Iterator[Organization]:
    """A new enterprise organization made for the test through ``sim_admin`` (in process, or by
    URL with the admin token): no other test shares its caps, rate limits or webhooks.

    Example::

        def test_webhooks(fresh_org, sim_admin):
            hooks.register(sim_admin, fresh_org.id)
    """
    made = sim_admin.create_organization("pytest fresh organization", "enterprise")
    client = created_sessions.watch(sim_admin.client(made["keys"]["unrestricted"]))
    with client:
        try:
            yield Organization(str(made["id"]), str(made["plan"]), dict(made["keys"]), client)
        finally:
            created_sessions.end_all(client)


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
