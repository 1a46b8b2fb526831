"""The simulator's controls with one vocabulary, in process or through a served ``/_sim`` API.

Why one class per door behind one interface: a test that plays audio, fails a worker or takes
the fleet away must run the same against the in-process simulator (fast, on a virtual clock) and
against ``avatar-sim serve`` (real HTTP, a scaled or manual clock). ``SimAdmin`` names what a
test may do; ``InProcessAdmin`` calls the platform's own admin controls, ``HttpAdmin`` the
``/_sim`` endpoints with the served simulator's admin token. Both answer the same JSON-ready
dicts (the ``/_sim`` bodies) and refuse with ``AdminRefused``. ``HttpAdmin`` lives in
``harness.testing.http_admin``.

``restore`` puts back everything a test changed for everyone (the worker pool, the queue's size,
a slow start-up, failing purges, the webhook endpoints it registered), so one test's fault does
not leak into the next on a shared served simulator. Every duration a method takes or gives is
annotated with its unit (``SimSeconds``); the reference page's table of methods is read from
those annotations (``harness.testing.reference``).
"""

from __future__ import annotations

import abc
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, ParamSpec, Self, TypeVar, cast

import httpx

from harness.target import InProcessTarget, Target

if TYPE_CHECKING:
    from sim.accounts import Scope
    from sim.platform import Platform

__all__ = [
    "AdminRefused",
    "AudioKind",
    "InProcessAdmin",
    "SimAdmin",
    "Unit",
    "in_process_client",
    "in_process_target",
]


@dataclass(frozen=True, slots=True)
class Unit:
    """The unit of a parameter or an answer, as the reference page shows it."""

    name: str


#: Seconds of the simulator's clock (simulated, whatever the served time factor).
SimSeconds = Annotated[float, Unit("simulated seconds")]
#: A number of workers, or of queued sessions.
Count = Annotated[int, Unit("count")]

AudioKind = Literal["speech", "silence"]

P = ParamSpec("P")
R = TypeVar("R")


class AdminRefused(Exception):
    """The simulator refused an admin call: ``code`` and ``message`` from its error envelope."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class SimAdmin(abc.ABC):
    """What a test may do to the simulator besides calling ``/v1``: time, audio, barge-in,
    faults, capacity, organizations and webhooks. Get one from the ``sim_admin`` fixture.

    Example::

        def test_no_capacity(api_client, sim_admin):
            sim_admin.set_capacity(0)          # restored when the test ends
            created = create_session(api_client, BODY).json()
            failed = wait_for(api_client, created["id"], "failed", within=30)
            assert failed["error"]["code"] == "no_capacity"
    """

    #: ``"in_process"`` or ``"url"``: where the simulator runs.
    kind: Literal["in_process", "url"]

    def __init__(self) -> None:
        self._pool: int | None = None  # the pool size before the test changed it
        self._queue: int | None = None  # the queue's size before the test changed it
        self._slowed = False
        self._purging = False
        self._endpoints: list[str] = []  # webhook endpoints registered through this admin

    @property
    @abc.abstractmethod
    def target(self) -> Target:
        """What this admin's clients talk to (``harness.target``): how time passes."""

    # -- time ----------------------------------------------------------------------------------

    @abc.abstractmethod
    def now(self) -> SimSeconds:
        """Simulated seconds since the simulator's epoch."""

    @abc.abstractmethod
    def advance(self, seconds: SimSeconds) -> SimSeconds:
        """Move the simulated clock forward, running every timer due; returns the new time.
        On a served simulator time keeps flowing from there."""

    @abc.abstractmethod
    def seconds_at(self, timestamp: str) -> SimSeconds:
        """The simulated seconds of an ISO-8601 timestamp the simulator gave (``created_at``,
        ``next_attempt_at``...), on the same scale as ``now``."""

    @abc.abstractmethod
    def step(self, within: SimSeconds) -> SimSeconds:
        """Run the clock to its next scheduled event, at most ``within`` ahead; the new time
        (what ``wait_for`` does between two polls of a manual clock)."""

    # -- accounts ------------------------------------------------------------------------------

    @abc.abstractmethod
    def create_organization(
        self, name: str = "test organization", plan: str = "enterprise", **options: Any
    ) -> dict[str, Any]:
        """A new organization with one key of each kind: ``{"id", "plan", "keys": {...}}``.
        ``options``: ``concurrency_override``, ``environment``."""

    @abc.abstractmethod
    def create_key(self, org_id: str, scopes: Sequence[str] | None = None) -> dict[str, Any]:
        """Another API key of ``org_id``: ``{"key", "org_id", "scopes", ...}``."""

    @abc.abstractmethod
    def describe_key(self, key: str) -> dict[str, Any]:
        """What the simulator knows of an API key: ``{"org_id", "scopes", "revoked", ...}``."""

    @abc.abstractmethod
    def client(self, key: str) -> httpx.Client:
        """An ``httpx.Client`` authenticated with ``key`` and talking to this simulator, which
        ``wait_for`` and the other helpers know how to wait on. Close it when done."""

    # -- sessions: what the client and the worker do -------------------------------------------

    @abc.abstractmethod
    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: SimSeconds = 5.0
    ) -> dict[str, Any]:
        """The client publishes ``seconds`` of speech or silence into a running session (the
        idle timer counts from the end of it); answers the session."""

    @abc.abstractmethod
    def barge_in(self, session_id: str) -> dict[str, Any]:
        """Barge-in (``lk.clear_buffer``): drop the worker's buffered output."""

    @abc.abstractmethod
    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's lifecycle events from the simulator's event log, oldest first:
        ``{"id", "type", "created_at", "status", "data"}`` (``data`` holds ``reason`` or
        ``code``)."""

    # -- faults --------------------------------------------------------------------------------

    @abc.abstractmethod
    def crash_worker(self, session_id: str) -> dict[str, Any]:
        """Crash the worker hosting the session (``worker_crash``): ``{"worker_id",
        "session"}``; the session fails ``worker_lost``."""

    @abc.abstractmethod
    def capacity(self) -> dict[str, Any]:
        """The worker pool: ``{"capacity", "workers", "idle", "busy", "restarting", "queued",
        "queue_size"}``."""

    def set_capacity(self, workers: Count) -> dict[str, Any]:
        """Resize the worker pool (``capacity``; 0: nothing can start, queued sessions then fail
        ``no_capacity``). ``restore`` puts the size back."""
        if self._pool is None:
            self._pool = int(self.capacity()["capacity"])
        return self._set_capacity(workers)

    def set_queue_size(self, sessions: Count) -> dict[str, Any]:
        """Bound the wait queue: a create that finds no free worker and ``sessions`` already
        waiting is refused ``503 at_capacity``. ``restore`` puts the size back."""
        if self._queue is None:
            self._queue = int(self.capacity()["queue_size"])
        return self._set_queue_size(sessions)

    def at_capacity(self) -> dict[str, Any]:
        """The ``at_capacity`` fault: no worker and no room in the queue, so every create is
        refused ``503 at_capacity`` with a ``Retry-After`` until ``restore``."""
        self.set_capacity(0)
        return self.set_queue_size(0)

    def slow_startup(
        self, extra_seconds: SimSeconds, duration: SimSeconds | None = None
    ) -> dict[str, Any]:
        """The ``slow_startup`` fault: ``extra_seconds`` more for every worker boot for
        ``duration`` (``None``: until ``restore``)."""
        self._slowed = True
        return self._slow_startup(extra_seconds, duration)

    @abc.abstractmethod
    def lose_heartbeats(self, session_id: str, seconds: SimSeconds) -> dict[str, Any]:
        """The ``heartbeat_loss`` fault: drop a running session's heartbeats for ``seconds``;
        past the limit it fails ``worker_lost``."""

    def purge_failure(self, enabled: bool = True) -> dict[str, Any]:
        """The ``purge_failure`` fault: every run-content purge fails (the deletion ends
        ``failed``) while enabled; ``restore`` turns it off."""
        self._purging = self._purging or enabled
        return self._purge_failure(enabled)

    # -- webhooks ------------------------------------------------------------------------------

    def register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Register a webhook endpoint of ``org_id``; the answer carries its ``id`` and
        ``secret``. ``restore`` unregisters it."""
        endpoint = self._register_webhook(org_id, url, event_types)
        self._endpoints.append(str(endpoint["id"]))
        return endpoint

    def unregister_webhook(self, endpoint_id: str) -> dict[str, Any]:
        """Stop sending to an endpoint: its deliveries not yet attempted end ``canceled``."""
        removed = self._unregister_webhook(endpoint_id)
        if endpoint_id in self._endpoints:
            self._endpoints.remove(endpoint_id)
        return removed

    @abc.abstractmethod
    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        """Every delivery to ``org_id``'s endpoints, each with its ``attempts``: what was really
        sent and answered (in process too: a delivery is a real HTTP request)."""

    # -- clean-up ------------------------------------------------------------------------------

    def restore(self) -> None:
        """Undo what affects every later test: the pool and queue sizes, a slow start-up,
        failing purges and the webhook endpoints registered here."""
        if self._pool is not None:
            self._set_capacity(self._pool)
            self._pool = None
        if self._queue is not None:
            self._set_queue_size(self._queue)
            self._queue = None
        if self._slowed:
            self._slow_startup(0.0, None)
            self._slowed = False
        if self._purging:
            self._purge_failure(False)
            self._purging = False
        while self._endpoints:
            endpoint_id = self._endpoints.pop()
            try:
                self._unregister_webhook(endpoint_id)
            except AdminRefused as refused:
                if refused.code != "webhook_endpoint.not_found":
                    raise

    def close(self) -> None:  # noqa: B027 - optional: only a door with connections has any
        """Release the connections this admin holds (nothing in process)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def _set_capacity(self, workers: int) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _set_queue_size(self, sessions: int) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _purge_failure(self, enabled: bool) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None
    ) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _unregister_webhook(self, endpoint_id: str) -> dict[str, Any]: ...


class InProcessAdmin(SimAdmin):
    """``SimAdmin`` over an in-process ``sim.platform.Platform`` (its ``admin`` and ``clock``).
    Webhooks are delivered for real (``harness.testing.delivery``): signed HTTP requests to the
    registered URL, retried on the virtual clock.

    Example::

        admin = InProcessAdmin(Platform.create())
        org = admin.create_organization(plan="free")
        with admin.client(org["keys"]["unrestricted"]) as client:
            client.get("/v1/sessions")
    """

    kind: Literal["in_process", "url"] = "in_process"

    def __init__(self, platform: Platform) -> None:
        from harness.testing.delivery import deliver_for_real

        super().__init__()
        self.platform = platform
        deliver_for_real(platform)

    @property
    def target(self) -> Target:
        return in_process_target(self.platform)

    def _do(self, call: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """``call``'s answer, a refusal of the platform's raised as ``AdminRefused``."""
        from sim.asgi.envelope import status_of
        from sim.errors import DomainError

        try:
            return call(*args, **kwargs)
        except DomainError as error:
            # The status the served route answers, so a refusal reads the same either way.
            raise AdminRefused(error.code, error.message, status_of(error)) from None

    def now(self) -> SimSeconds:
        return self.platform.clock.now

    def advance(self, seconds: SimSeconds) -> SimSeconds:
        self.platform.clock.advance(seconds)
        return self.platform.clock.now

    def seconds_at(self, timestamp: str) -> SimSeconds:
        return self.platform.clock.seconds_at(moment(timestamp))

    def step(self, within: SimSeconds) -> SimSeconds:
        clock = self.platform.clock
        due, deadline = clock.next_event_at(), clock.now + within
        clock.advance_to(deadline if due is None else max(clock.now, min(due, deadline)))
        return clock.now

    def create_organization(
        self, name: str = "test organization", plan: str = "enterprise", **options: Any
    ) -> dict[str, Any]:
        return self._do(self.platform.admin.create_organization, name, plan, **options)

    def create_key(self, org_id: str, scopes: Sequence[str] | None = None) -> dict[str, Any]:
        # Strings, as by URL: the platform refuses one that is not a scope, as the route does.
        wanted = cast("Sequence[Scope] | None", scopes)
        return self._do(self.platform.admin.create_key, org_id, wanted)

    def describe_key(self, key: str) -> dict[str, Any]:
        return self._do(self.platform.admin.describe_key, key)

    def client(self, key: str) -> httpx.Client:
        return in_process_client(self.platform, key)

    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: SimSeconds = 5.0
    ) -> dict[str, Any]:
        return self._do(self.platform.admin.inject_audio, session_id, kind, seconds)

    def barge_in(self, session_id: str) -> dict[str, Any]:
        return self._do(self.platform.admin.clear_buffer, session_id)

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        return list(self._do(self.platform.admin.session_events, session_id)["data"])

    def crash_worker(self, session_id: str) -> dict[str, Any]:
        return self._do(self.platform.admin.crash_worker, session_id)

    def capacity(self) -> dict[str, Any]:
        return self.platform.admin.capacity()

    def _set_capacity(self, workers: int) -> dict[str, Any]:
        return self._do(self.platform.admin.set_capacity, workers)

    def _set_queue_size(self, sessions: int) -> dict[str, Any]:
        return self._do(self.platform.admin.set_queue_size, sessions)

    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]:
        return self._do(self.platform.admin.slow_startup, extra_seconds, duration)

    def lose_heartbeats(self, session_id: str, seconds: SimSeconds) -> dict[str, Any]:
        return self._do(self.platform.admin.lose_heartbeats, session_id, seconds)

    def _purge_failure(self, enabled: bool) -> dict[str, Any]:
        return self.platform.admin.fail_purges(enabled)

    def _register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None
    ) -> dict[str, Any]:
        return self._do(self.platform.admin.register_webhook, org_id, url, event_types)

    def _unregister_webhook(self, endpoint_id: str) -> dict[str, Any]:
        return self._do(self.platform.admin.unregister_webhook, endpoint_id)

    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        return list(self._do(self.platform.admin.webhook_deliveries, org_id)["data"])


_platforms: weakref.WeakKeyDictionary[Platform, InProcessTarget] = weakref.WeakKeyDictionary()


def in_process_target(platform: Platform) -> InProcessTarget:
    """The one target of ``platform``, with its controls (its clients share the facade and the
    clock).

    Example::

        client = bind(httpx.Client(transport=..., base_url="http://testserver"),
                      in_process_target(platform))
    """
    target = _platforms.get(platform)
    if target is None:
        target = _platforms[platform] = InProcessTarget(platform, InProcessAdmin(platform))
    return target


def in_process_client(platform: Platform, key: str) -> httpx.Client:
    """A client of ``platform``'s facade authenticated with ``key``, bound to its target."""
    return in_process_target(platform).client_for(key)


def moment(timestamp: str) -> datetime:
    """An ISO-8601 timestamp of the simulator's (``Z`` or an offset) as an aware datetime."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
