"""The simulator's controls with one vocabulary, in process or through a served ``/_sim`` API.

Why one class per door behind one interface: a test that plays audio, fails a worker or takes
the fleet away must run the same against the in-process simulator (fast, on a virtual clock) and
against ``avatar-sim serve`` (real HTTP, scaled wall clock). ``SimAdmin`` names what a test may
do; ``InProcessAdmin`` calls the platform's own admin controls, ``HttpAdmin`` the ``/_sim``
endpoints with the served simulator's admin token. Both answer the same JSON-ready dicts (the
``/_sim`` bodies) and refuse with ``AdminRefused``. ``restore`` puts back what a test changed
for everyone (the worker pool, a slow start-up), so one test's fault does not leak into the next
on a shared served simulator.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

import httpx

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = ["AdminRefused", "HttpAdmin", "InProcessAdmin", "SimAdmin"]

AudioKind = Literal["speech", "silence"]


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
            created = api_client.post("/v1/sessions", json=BODY).json()
            failed = wait_for(api_client, created["id"], "failed", within=30)
            assert failed["error"]["code"] == "no_capacity"
    """

    #: ``"in_process"`` or ``"url"``: where the simulator runs.
    kind: Literal["in_process", "url"]

    def __init__(self) -> None:
        self._pool: int | None = None  # the pool size before the test changed it
        self._slowed = False

    # -- time ----------------------------------------------------------------------------------

    @abc.abstractmethod
    def now(self) -> float:
        """Simulated seconds since the simulator's epoch."""

    @abc.abstractmethod
    def advance(self, seconds: float) -> float:
        """Move the simulated clock forward, running every timer due; returns the new time.
        On a served simulator time keeps flowing from there."""

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
    def client(self, key: str) -> httpx.Client:
        """An ``httpx.Client`` authenticated with ``key`` and talking to this simulator, which
        ``wait_for`` and the other helpers know how to wait on. Close it when done."""

    # -- sessions: what the client and the worker do -------------------------------------------

    @abc.abstractmethod
    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: float = 5.0
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
        """Crash the worker hosting the session: ``{"worker_id", "session"}``."""

    @abc.abstractmethod
    def capacity(self) -> dict[str, Any]:
        """The worker pool: ``{"capacity", "workers", "idle", "busy", "restarting",
        "queued"}``."""

    def set_capacity(self, workers: int) -> dict[str, Any]:
        """Resize the worker pool (0: nothing can start; queued sessions then fail
        ``no_capacity``). ``restore`` puts the size back."""
        if self._pool is None:
            self._pool = int(self.capacity()["capacity"])
        return self._set_capacity(workers)

    def slow_startup(self, extra_seconds: float, duration: float | None = None) -> dict[str, Any]:
        """Add ``extra_seconds`` to every worker boot for ``duration`` seconds (``None``: until
        ``restore``)."""
        self._slowed = True
        return self._slow_startup(extra_seconds, duration)

    @abc.abstractmethod
    def lose_heartbeats(self, session_id: str, seconds: float) -> dict[str, Any]:
        """Drop a running session's heartbeats for ``seconds``; past the limit it fails
        ``worker_lost``."""

    # -- webhooks ------------------------------------------------------------------------------

    @abc.abstractmethod
    def register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Register a webhook endpoint of ``org_id``; the answer carries its ``secret``."""

    @abc.abstractmethod
    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        """Every delivery to ``org_id``'s endpoints, each with its ``attempts``."""

    # -- clean-up ------------------------------------------------------------------------------

    def restore(self) -> None:
        """Undo what affects every later test: the pool size and a slow start-up."""
        if self._pool is not None:
            self._set_capacity(self._pool)
            self._pool = None
        if self._slowed:
            self._slow_startup(0.0, None)
            self._slowed = False

    def close(self) -> None:  # noqa: B027 - optional: only a door with connections has any
        """Release the connections this admin holds (nothing in process)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @abc.abstractmethod
    def _set_capacity(self, workers: int) -> dict[str, Any]: ...

    @abc.abstractmethod
    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]: ...


class InProcessAdmin(SimAdmin):
    """``SimAdmin`` over an in-process ``sim.platform.Platform`` (its ``admin`` and ``clock``).

    Example::

        admin = InProcessAdmin(Platform.create())
        org = admin.create_organization(plan="free")
        with admin.client(org["keys"]["unrestricted"]) as client:
            client.get("/v1/sessions")
    """

    kind: Literal["in_process", "url"] = "in_process"

    def __init__(self, platform: Platform) -> None:
        super().__init__()
        self.platform = platform

    def _do(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        from sim.errors import DomainError

        try:
            return call(*args, **kwargs)
        except DomainError as error:
            raise AdminRefused(error.code, error.message) from None

    def now(self) -> float:
        return self.platform.clock.now

    def advance(self, seconds: float) -> float:
        self.platform.clock.advance(seconds)
        return self.platform.clock.now

    def create_organization(
        self, name: str = "test organization", plan: str = "enterprise", **options: Any
    ) -> dict[str, Any]:
        created: dict[str, Any] = self._do(
            self.platform.admin.create_organization, name, plan, **options
        )
        return created

    def create_key(self, org_id: str, scopes: Sequence[str] | None = None) -> dict[str, Any]:
        created: dict[str, Any] = self._do(self.platform.admin.create_key, org_id, scopes)
        return created

    def client(self, key: str) -> httpx.Client:
        from harness.testing.target import in_process_client

        return in_process_client(self.platform, key)

    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: float = 5.0
    ) -> dict[str, Any]:
        played: dict[str, Any] = self._do(
            self.platform.admin.inject_audio, session_id, kind, seconds
        )
        return played

    def barge_in(self, session_id: str) -> dict[str, Any]:
        cleared: dict[str, Any] = self._do(self.platform.admin.clear_buffer, session_id)
        return cleared

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        listed: dict[str, Any] = self._do(self.platform.admin.session_events, session_id)
        return list(listed["data"])

    def crash_worker(self, session_id: str) -> dict[str, Any]:
        crashed: dict[str, Any] = self._do(self.platform.admin.crash_worker, session_id)
        return crashed

    def capacity(self) -> dict[str, Any]:
        return self.platform.admin.capacity()

    def _set_capacity(self, workers: int) -> dict[str, Any]:
        pool: dict[str, Any] = self._do(self.platform.admin.set_capacity, workers)
        return pool

    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]:
        pool: dict[str, Any] = self._do(self.platform.admin.slow_startup, extra_seconds, duration)
        return pool

    def lose_heartbeats(self, session_id: str, seconds: float) -> dict[str, Any]:
        lost: dict[str, Any] = self._do(self.platform.admin.lose_heartbeats, session_id, seconds)
        return lost

    def register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        endpoint: dict[str, Any] = self._do(
            self.platform.admin.register_webhook, org_id, url, event_types
        )
        return endpoint

    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        listed: dict[str, Any] = self._do(self.platform.admin.webhook_deliveries, org_id)
        return list(listed["data"])


class HttpAdmin(SimAdmin):
    """``SimAdmin`` over a served simulator's ``/_sim`` API (``avatar-sim serve`` prints the
    admin token and writes it with ``--keys-out``).

    Example::

        with HttpAdmin("http://127.0.0.1:8080", "simadmin_...") as admin:
            admin.set_capacity(0)
            ...
            admin.restore()
    """

    kind: Literal["in_process", "url"] = "url"

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=f"{self.base_url}/_sim",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        response = self._http.request(method, path, json=body, params=params)
        if response.status_code >= 300:
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "http_error", response.text[:200]
            raise AdminRefused(code, message, response.status_code)
        return response.json()

    def now(self) -> float:
        return float(self._call("GET", "/clock")["seconds"])

    def advance(self, seconds: float) -> float:
        return float(self._call("POST", "/clock/advance", {"seconds": seconds})["seconds"])

    def create_organization(
        self, name: str = "test organization", plan: str = "enterprise", **options: Any
    ) -> dict[str, Any]:
        created: dict[str, Any] = self._call(
            "POST", "/organizations", {"name": name, "plan": plan, **options}
        )
        return created

    def create_key(self, org_id: str, scopes: Sequence[str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"org_id": org_id}
        if scopes is not None:
            body["scopes"] = list(scopes)
        created: dict[str, Any] = self._call("POST", "/keys", body)
        return created

    def client(self, key: str) -> httpx.Client:
        from harness.testing.target import url_client

        return url_client(self.base_url, key, admin=self)

    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: float = 5.0
    ) -> dict[str, Any]:
        played: dict[str, Any] = self._call(
            "POST", f"/sessions/{session_id}/audio", {"kind": kind, "duration": seconds}
        )
        return played

    def barge_in(self, session_id: str) -> dict[str, Any]:
        cleared: dict[str, Any] = self._call("POST", f"/sessions/{session_id}/clear_buffer")
        return cleared

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/sessions/{session_id}/events")["data"])

    def crash_worker(self, session_id: str) -> dict[str, Any]:
        crashed: dict[str, Any] = self._call(
            "POST", "/faults/worker_crash", {"session_id": session_id}
        )
        return crashed

    def capacity(self) -> dict[str, Any]:
        pool: dict[str, Any] = self._call("GET", "/faults/capacity")
        return pool

    def _set_capacity(self, workers: int) -> dict[str, Any]:
        pool: dict[str, Any] = self._call("POST", "/faults/capacity", {"workers": workers})
        return pool

    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"extra_seconds": extra_seconds}
        if duration is not None:
            body["duration"] = duration
        pool: dict[str, Any] = self._call("POST", "/faults/slow_startup", body)
        return pool

    def lose_heartbeats(self, session_id: str, seconds: float) -> dict[str, Any]:
        lost: dict[str, Any] = self._call(
            "POST", "/faults/heartbeat_loss", {"session_id": session_id, "duration": seconds}
        )
        return lost

    def register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"org_id": org_id, "url": url}
        if event_types is not None:
            body["event_types"] = list(event_types)
        endpoint: dict[str, Any] = self._call("POST", "/webhooks", body)
        return endpoint

    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        listed = self._call("GET", "/webhooks/deliveries", params={"org_id": org_id})
        return list(listed["data"])

    def close(self) -> None:
        self._http.close()
