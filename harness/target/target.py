"""The one seam through which the harness reaches an implementation: in process or by URL.

Why one: conformance, the pytest toolkit, captures and the runner's HTTP door all speak to "an
implementation" that may be the simulator in this process or any deployment by URL, with the
simulator's controls (its admin API) or without. A ``Target`` says where requests go, with which
keys (``Credentials``, by role), how the target's time passes (``now``, ``wait``, ``jump``) and
whether it has controls (``admin``); every request a run makes through ``request`` or ``send``
is recorded as an ``Exchange`` and shown to the ``observers`` (the conformance model). Nothing
that uses a target can tell which kind it has, except through ``kind``, ``admin`` and ``seconds``,
so the same call means the same thing in process and by URL.

Time: in process the simulator's clock stands still until someone advances it, so waiting runs
it to its next scheduled event (and a test can assert the exact time). By URL time is real:
waiting polls while the wall clock runs, and a served simulator's admin API says its simulated
time (its clock may run faster than the wall); a served clock that stands still between two
polls is a manual one (``--manual-clock``), which waiting runs to its next event, as in process.
"""

from __future__ import annotations

import abc
import json
import time
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import httpx

from harness.target.exchange import Exchange, Observer
from harness.target.roles import Credentials
from harness.target.transport import SyncASGITransport

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from harness.testing.admin import SimAdmin
    from sim.platform import Platform

__all__ = [
    "InProcessTarget",
    "Target",
    "TargetStalled",
    "TargetUnreachable",
    "UrlTarget",
    "bind",
]

#: The base URL of an in-process app (httpx needs one; no request leaves the process).
IN_PROCESS_URL = "http://testserver"
#: Wall seconds between two polls of a served simulator (its clock is read at each).
SERVED_POLL_SECONDS = 0.02
#: Wall seconds between two polls of a deployment: short enough to see a status that lasts a
#: fraction of a second (a session is ``running`` for as little as its idle timeout).
DEPLOYMENT_POLL_SECONDS = 0.05


#: Each client ``bind`` was told of, with its target (``harness.target.binding.target_of``).
BOUND: weakref.WeakKeyDictionary[httpx.Client, Target] = weakref.WeakKeyDictionary()


def bind(client: httpx.Client, target: Target) -> httpx.Client:
    """Tell the helpers what ``client`` talks to; returns the client.

    Example::

        client = bind(httpx.Client(transport=..., base_url="http://testserver"), target)
        wait_for(client, session_id, "running", within=30)
    """
    BOUND[client] = target
    return client


class TargetUnreachable(Exception):
    """The target did not answer at all (connection refused, DNS, a broken connection)."""


class TargetStalled(TargetUnreachable):
    """The target kept a request past the timeout (``--timeout``) without answering."""


class Target(abc.ABC):
    """An implementation: where its requests go, with which keys, how its time passes.

    Example::

        target = Target.url("https://api.example.com", Credentials(api=key))
        exchange = target.request("GET", "/v1/models")
        client = target.client_for(key)          # a plain httpx client, bound to the target
    """

    kind: Literal["in_process", "url"]
    #: The simulator's controls, when the target is one (and, by URL, its token is known).
    admin: SimAdmin | None

    def __init__(
        self, credentials: Credentials | None, admin: SimAdmin | None, timeout: float
    ) -> None:
        self.credentials = credentials if credentials is not None else Credentials(api="")
        self.admin = admin
        self.timeout = timeout
        self.observers: list[Observer] = []
        #: The run's clock, in target seconds: each exchange of the contract is stamped with it.
        self.clock: Callable[[], float] | None = None
        self._client: httpx.Client | None = None

    @classmethod
    def url(
        cls,
        base_url: str,
        credentials: Credentials | None = None,
        *,
        admin: SimAdmin | None = None,
        timeout: float = 30.0,
    ) -> UrlTarget:
        """A deployment (or a served simulator) at ``http(s)://host[:port]``, without ``/v1``."""
        return UrlTarget(base_url, admin, credentials=credentials, timeout=timeout)

    @classmethod
    def in_process(
        cls,
        platform: Platform,
        credentials: Credentials | None = None,
        *,
        admin: SimAdmin | None = None,
        app: Any = None,
    ) -> InProcessTarget:
        """The simulator in this process, through its facade (``app``: one built already)."""
        return InProcessTarget(platform, admin, credentials=credentials, app=app)

    @classmethod
    def asgi(cls, app: Any, credentials: Credentials | None = None) -> UrlTarget:
        """An ASGI app in this process that is not the simulator (a stand-in deployment): its
        time is the wall clock's, as for any deployment."""
        return UrlTarget(
            IN_PROCESS_URL,
            credentials=credentials,
            transport=SyncASGITransport(app),
            async_transport=httpx.ASGITransport(app=app),
        )

    # -- where requests go -------------------------------------------------------------------

    @abc.abstractmethod
    def _transport(self) -> httpx.BaseTransport | None:
        """The synchronous transport (``None``: httpx's network one)."""

    @abc.abstractmethod
    def _async_transport(self) -> httpx.AsyncBaseTransport | None:
        """The asynchronous transport (``None``: httpx's network one)."""

    @property
    @abc.abstractmethod
    def base_url(self) -> str:
        """The URL requests are sent to (``http://testserver`` in process)."""

    @property
    def client(self) -> httpx.Client:
        """The run's client: no key of its own (``request`` adds the role's)."""
        if self._client is None:
            self._client = httpx.Client(
                transport=self._transport(), base_url=self.base_url, timeout=self.timeout
            )
        return self._client

    def client_for(self, key: str | None, *, timeout: float | None = None) -> httpx.Client:
        """A new client authenticated with ``key``, bound to this target (``target_of``)."""
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        client = httpx.Client(
            transport=self._transport(),
            base_url=self.base_url,
            headers=headers,
            timeout=self.timeout if timeout is None else timeout,
        )
        return bind(client, self)

    def async_client(self, *, timeout: float | None = None) -> httpx.AsyncClient:
        """An asynchronous client with no key of its own (the runner's HTTP door)."""
        return httpx.AsyncClient(
            transport=self._async_transport(),
            base_url=self.base_url,
            timeout=self.timeout if timeout is None else timeout,
        )

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def authorization(self, role: str | None) -> dict[str, str]:
        """The ``Authorization`` header of ``role`` (none for ``None``)."""
        if role is None:
            return {}
        secret = self.credentials.get(role)
        if secret is None:
            raise KeyError(f"no credential for role {role!r}")
        return {"Authorization": f"Bearer {secret}"}

    def request(
        self,
        method: str,
        path: str,
        *,
        role: str | None = "api",
        headers: Mapping[str, str] | None = None,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        operation: str = "",
        observe: bool = True,
    ) -> Exchange:
        """Send one request as ``role`` (its bearer key) and return the observed exchange."""
        merged = {**self.authorization(role), **dict(headers or {})}
        content: bytes | None = None
        if json_body is not None:
            content = json.dumps(json_body, separators=(",", ":")).encode()
            merged.setdefault("Content-Type", "application/json")
        request = self.client.build_request(
            method, path, headers=merged, content=content, params=dict(params or {})
        )
        return self.send(request, operation=operation or f"{method} {path}", observe=observe)

    def send(
        self, request: httpx.Request, *, operation: str = "", observe: bool = True
    ) -> Exchange:
        """Send a prepared request; observers see the exchange (unless ``observe`` is false)."""
        request.read()  # a multipart body is a stream; the exchange keeps its bytes
        # The simulator's admin API (the admin clock among it) is not stamped: reading the clock
        # there would recurse.
        clock = None if request.url.path.startswith("/_sim/") else self.clock
        sent_at = clock() if clock is not None else None
        try:
            response = self.client.send(request)
            body = response.read()
        except httpx.TimeoutException as exc:
            seconds = self.client.timeout.read
            raise TargetStalled(
                f"{request.method} {request.url.path} got no answer within {seconds:g} s"
            ) from exc
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"{request.method} {request.url}: {exc}") from exc
        response.close()
        received_at = clock() if clock is not None else None
        exchange = Exchange(
            method=request.method,
            url=str(request.url),
            path=request.url.path,
            request_headers=dict(request.headers),
            request_body=request.content,
            status=response.status_code,
            headers=response.headers,
            body=body,
            operation=operation or f"{request.method} {request.url.path}",
            response=response,
            sent_at=sent_at,
            received_at=received_at,
        )
        for observer in list(self.observers) if observe else []:
            observer(exchange)
        return exchange

    # -- how time passes ---------------------------------------------------------------------

    @abc.abstractmethod
    def now(self) -> float:
        """The target's time in seconds (simulated, or the wall clock for a deployment)."""

    @abc.abstractmethod
    def wait(self, deadline: float) -> None:
        """Let some time pass, never beyond ``deadline`` (a value of ``now``)."""

    @abc.abstractmethod
    def jump(self, seconds: float) -> None:
        """Let ``seconds`` pass at once: the simulator's clock runs every timer due on the way
        (in process, or through the admin API); a deployment's wall clock is slept through."""

    @property
    @abc.abstractmethod
    def seconds(self) -> str:
        """What ``now`` counts, for messages: ``simulated seconds`` or ``wall seconds``."""


class InProcessTarget(Target):
    """The simulator in this process: waiting runs its clock to the next scheduled event.

    Example::

        target = in_process_target(platform)   # harness.testing.admin: with its controls
        client = target.client_for(key)        # a client of its facade, bound to it
    """

    kind: Literal["in_process", "url"] = "in_process"

    def __init__(
        self,
        platform: Platform,
        admin: SimAdmin | None = None,
        *,
        credentials: Credentials | None = None,
        app: Any = None,
    ) -> None:
        super().__init__(credentials, admin, 30.0)
        self.platform = platform
        self._app: Starlette | None = app

    @property
    def app(self) -> Starlette:
        """The facade over the platform (one per target, built on first use)."""
        if self._app is None:
            from sim.asgi import create_app

            self._app = create_app(self.platform)
        return self._app

    @property
    def base_url(self) -> str:
        return IN_PROCESS_URL

    def _transport(self) -> httpx.BaseTransport:
        return SyncASGITransport(self.app)

    def _async_transport(self) -> httpx.AsyncBaseTransport:
        return httpx.ASGITransport(app=self.app)

    def now(self) -> float:
        return self.platform.clock.now

    def wait(self, deadline: float) -> None:
        clock = self.platform.clock
        due = clock.next_event_at()
        now = clock.now
        step = deadline if due is None else min(max(due, now), deadline)
        clock.advance_to(max(step, now))

    def jump(self, seconds: float) -> None:
        self.platform.clock.advance(seconds)

    @property
    def seconds(self) -> str:
        return "simulated seconds"


class UrlTarget(Target):
    """A base URL: waiting is real time, read from a served simulator's admin API when known,
    so durations mean the same as in process at any time factor.

    Example::

        target = UrlTarget("http://127.0.0.1:8080", HttpAdmin("http://127.0.0.1:8080", token))
        client = target.client_for(key)
    """

    kind: Literal["in_process", "url"] = "url"

    def __init__(
        self,
        base_url: str,
        admin: SimAdmin | None = None,
        *,
        credentials: Credentials | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(credentials, admin, timeout)
        self._base_url = base_url.rstrip("/")
        self._sync_transport = transport
        self._async = async_transport
        self._last_seen: float | None = None  # the served clock at the previous wait

    @property
    def base_url(self) -> str:
        return self._base_url

    def _transport(self) -> httpx.BaseTransport | None:
        return self._sync_transport

    def _async_transport(self) -> httpx.AsyncBaseTransport | None:
        return self._async

    def now(self) -> float:
        return self.admin.now() if self.admin is not None else time.monotonic()

    def wait(self, deadline: float) -> None:
        if self.admin is None:
            time.sleep(max(0.0, min(DEPLOYMENT_POLL_SECONDS, deadline - time.monotonic())))
            return
        now = self.admin.now()
        if now == self._last_seen:  # nothing moved it since the last poll: a manual clock
            now = self.admin.step(max(0.0, deadline - now))
        else:
            time.sleep(SERVED_POLL_SECONDS)
        self._last_seen = now

    def jump(self, seconds: float) -> None:
        if self.admin is None:
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                time.sleep(min(left, 1.0))
            return
        self.admin.advance(seconds)

    @property
    def seconds(self) -> str:
        return "simulated seconds" if self.admin is not None else "wall seconds"
