"""What a client talks to, and how time passes there: the seam behind ``wait_for`` and kin.

Why: the same test waits for a session to end in two very different worlds. In process the
simulator's clock stands still until someone advances it, so waiting means running the
simulation forward, event by event, to the moment the state comes (and a test can then assert
the exact time). Against a URL time is real: waiting means polling while the wall clock runs, and
"within 30 seconds" means 30 seconds of the target's time, which a served simulator with an
admin token can tell (its clock may run 20 times faster than the wall), and a deployment's is
the wall clock's. A ``Target`` hides which; ``target_of(client)`` finds the one a client was
bound to (the plugin binds ``api_client``, ``sim_admin.client`` binds its clients).

A target in process has its admin (``harness.testing.admin``), and an admin's ``client`` is
bound to its target. A served simulator whose clock stands still (``--manual-clock``, as
``--avatar-sim-serve`` starts it) is waited on as in process: the clock is run to its next
scheduled event (``POST /_sim/clock/step``), so a wait stops at the same simulated moment.
"""

from __future__ import annotations

import abc
import time
import weakref
from typing import TYPE_CHECKING, Literal

import httpx

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from harness.testing.admin import SimAdmin
    from sim.platform import Platform

__all__ = [
    "InProcessTarget",
    "Target",
    "UnknownTarget",
    "UrlTarget",
    "bind",
    "target_of",
    "url_client",
]

#: Wall seconds between two polls of a served simulator (its clock is read at each).
SERVED_POLL_SECONDS = 0.02
#: Wall seconds between two polls of a deployment: short enough to see a status that lasts a
#: fraction of a second (a session is ``running`` for as little as its idle timeout).
DEPLOYMENT_POLL_SECONDS = 0.05


class UnknownTarget(LookupError):
    """A client none of the helpers knows how to wait on (an in-process app not bound)."""


class Target(abc.ABC):
    """Where a client's requests go: its clock, how to let time pass, its admin API if any.

    Example::

        target = target_of(api_client)
        print(target.kind, target.seconds, target.admin is not None)
    """

    kind: Literal["in_process", "url"]
    #: The simulator's controls, when the target is one (and, against a URL, its token is known).
    admin: SimAdmin | None

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
    """An in-process simulator: waiting runs its clock to the next scheduled event.

    Example::

        target = in_process_target(platform)   # harness.testing.admin: with its controls
        client = bind(httpx.Client(transport=SyncASGITransport(target.app)), target)
    """

    kind: Literal["in_process", "url"] = "in_process"

    def __init__(self, platform: Platform, admin: SimAdmin | None = None) -> None:
        self.platform = platform
        #: The platform's controls (``harness.testing.admin.in_process_target`` gives them).
        self.admin = admin
        self._app: Starlette | None = None

    @property
    def app(self) -> Starlette:
        """The facade over the platform (one per target, built on first use)."""
        if self._app is None:
            from sim.asgi import create_app

            self._app = create_app(self.platform)
        return self._app

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
    """A base URL: waiting is real time. With a served simulator's admin API, ``now`` is its
    simulated clock, so durations mean the same as in process at any time factor; a served
    clock that stands still between two polls is a manual one (``--manual-clock``), which
    waiting then runs to its next scheduled event, as in process.

    Example::

        target = UrlTarget("http://127.0.0.1:8080", HttpAdmin("http://127.0.0.1:8080", token))
        bind(httpx.Client(base_url="http://127.0.0.1:8080", headers=auth), target)
    """

    kind: Literal["in_process", "url"] = "url"

    def __init__(self, base_url: str, admin: SimAdmin | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.admin = admin
        self._last_seen: float | None = None  # the served clock at the previous wait

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


_bound: weakref.WeakKeyDictionary[httpx.Client, Target] = weakref.WeakKeyDictionary()


def bind(client: httpx.Client, target: Target) -> httpx.Client:
    """Tell the helpers what ``client`` talks to; returns the client.

    Example::

        client = httpx.Client(transport=..., base_url="http://testserver")
        bind(client, InProcessTarget(platform))
        wait_for(client, session_id, "running", within=30)
    """
    _bound[client] = target
    return client


def target_of(client: httpx.Client) -> Target:
    """The target ``client`` was bound to; an unbound client with a real base URL is taken to
    be a deployment (wall clock, no admin API).

    Example::

        if target_of(api_client).admin is None:
            pytest.skip("needs the simulator's controls")
    """
    target = _bound.get(client)
    if target is not None:
        return target
    host = client.base_url.host
    if not host or host == "testserver":
        raise UnknownTarget(
            "this client talks to an in-process app the avatar-sim helpers do not know: use the "
            "api_client fixture or sim_admin.client(key), or bind(client, InProcessTarget(...))"
        )
    deployment = UrlTarget(str(client.base_url))
    bind(client, deployment)
    return deployment


def url_client(
    base_url: str, key: str, *, admin: SimAdmin | None = None, timeout: float = 30.0
) -> httpx.Client:
    """A client of ``base_url`` authenticated with ``key``, bound to a ``UrlTarget``."""
    client = httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"Authorization": f"Bearer {key}"},
        timeout=timeout,
    )
    return bind(client, UrlTarget(base_url, admin))
