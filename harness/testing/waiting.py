"""Wait until a session, run or avatar reaches a status, on any target.

Why: every state-transition test waits, and a hand-written loop that advances the clock a
second at a time only works in process. ``wait_for`` polls the resource through the client and
lets time pass the target's way between polls (``harness.testing.target``): in process it runs
the simulation to the next scheduled event, so it returns at the exact simulated moment the
status came; against a URL it polls in real time. ``within`` is in the target's seconds. When the
status never comes, or the resource reaches a terminal status that is not the one awaited, the
failure says what was seen and when, with the session's lifecycle events and their reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import httpx

from harness.testing.target import Target, target_of

__all__ = ["StateNotReached", "pass_time", "wait_for", "wait_for_avatar", "wait_for_run"]

SESSION_TERMINAL = frozenset({"ended", "failed", "canceled"})
RUN_TERMINAL = frozenset({"succeeded", "failed", "canceled"})
AVATAR_SETTLED = frozenset({"ready", "failed"})


class StateNotReached(AssertionError):
    """A resource did not reach the awaited status in time (or can no longer reach it)."""


def wait_for(
    client: httpx.Client, session_id: str, status: str | Collection[str], *, within: float = 60.0
) -> dict[str, Any]:
    """Poll ``GET /v1/sessions/{id}`` until its status is ``status`` (or one of several); the
    session as first seen in it. ``within``: the longest it may take, in the target's seconds
    (simulated in process and on a served simulator, wall seconds on a deployment).

    Example::

        created = api_client.post("/v1/sessions", json=body).json()
        running = wait_for(api_client, created["id"], "running", within=30)
        idle = body["idle_timeout_seconds"]
        ended = wait_for(api_client, created["id"], "ended", within=idle + 5)
    """

    def history() -> str:
        from harness.testing.events import session_events

        return str(session_events(client, session_id))

    return _wait(
        client,
        f"/v1/sessions/{session_id}",
        f"session {session_id}",
        _wanted(status),
        SESSION_TERMINAL,
        within,
        history,
    )


def wait_for_run(
    client: httpx.Client, run_id: str, status: str | Collection[str], *, within: float = 300.0
) -> dict[str, Any]:
    """Poll ``GET /v1/runs/{id}/status`` until the run's status is ``status``; its status body
    ``{"id", "status", "progress", "error"}``. A failure lists the run's events.

    Example::

        run = api_client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}).json()
        done = wait_for_run(api_client, run["id"], "succeeded", within=120)
    """

    def history() -> str:
        response = client.get(f"/v1/runs/{run_id}/events", params={"limit": 100})
        if response.status_code != 200:
            return f"(its events could not be read: {response.status_code})"
        lines = [
            f"  {event.get('created_at')} {event.get('type')}"
            for event in response.json().get("data", [])
        ]
        return "\n".join([f"{run_id} (events from GET /v1/runs/{run_id}/events):", *lines])

    return _wait(
        client,
        f"/v1/runs/{run_id}/status",
        f"run {run_id}",
        _wanted(status),
        RUN_TERMINAL,
        within,
        history,
    )


def wait_for_avatar(
    client: httpx.Client, avatar_id: str, status: str | Collection[str], *, within: float = 900.0
) -> dict[str, Any]:
    """Poll ``GET /v1/avatars/{id}`` until the avatar's status is ``status`` (``ready`` or
    ``failed`` once fitting is over); the avatar.

    Example::

        avatar = api_client.post("/v1/avatars", files={"image": png}).json()
        ready = wait_for_avatar(api_client, avatar["id"], "ready", within=600)
    """
    return _wait(
        client,
        f"/v1/avatars/{avatar_id}",
        f"avatar {avatar_id}",
        _wanted(status),
        AVATAR_SETTLED,
        within,
        lambda: "",
    )


def pass_time(client: httpx.Client, seconds: float) -> float:
    """Let ``seconds`` of the target's time pass (running every timer due in process, sleeping
    against a URL); returns the target's time after. For a client that honours ``Retry-After``.

    Example::

        refused = api_client.post("/v1/sessions", json=body)
        if refused.status_code == 429:
            pass_time(api_client, float(refused.headers["Retry-After"]))
    """
    if seconds < 0:
        raise ValueError("time only moves forward")
    target = target_of(client)
    deadline = target.now() + seconds
    while (now := target.now()) < deadline:
        target.wait(deadline)
    return now


def _wanted(status: str | Collection[str]) -> frozenset[str]:
    return frozenset({status} if isinstance(status, str) else status)


def _wait(
    client: httpx.Client,
    path: str,
    what: str,
    wanted: frozenset[str],
    final: frozenset[str],
    within: float,
    history: Callable[[], str],
) -> dict[str, Any]:
    if within < 0:
        raise ValueError("within must be >= 0 seconds")
    target = target_of(client)
    start = target.now()
    deadline = start + within
    seen: list[tuple[float, str]] = []
    while True:
        response = client.get(path)
        if response.status_code == 429 and "retry-after" in response.headers:
            pass_time(client, float(response.headers["retry-after"]))  # polled too fast
            continue
        if response.status_code != 200:
            raise StateNotReached(
                f"GET {path} answered {response.status_code} while waiting for "
                f"{_names(wanted)}: {response.text[:300]}"
            )
        body: dict[str, Any] = response.json()
        current = str(body.get("status"))
        now = target.now()
        if not seen or seen[-1][1] != current:
            seen.append((now - start, current))
        if current in wanted:
            return body
        if current in final:
            _fail(what, wanted, f"it is {current}, which it never leaves", seen, target, history)
        if now >= deadline:
            _fail(what, wanted, f"it is still {current} after {within:g} s", seen, target, history)
        target.wait(deadline)


def _names(wanted: frozenset[str]) -> str:
    return " or ".join(sorted(wanted))


def _fail(
    what: str,
    wanted: frozenset[str],
    why: str,
    seen: list[tuple[float, str]],
    target: Target,
    history: Callable[[], str],
) -> None:
    observed = ", ".join(f"{status} at +{at:.3f}" for at, status in seen)
    told = history()
    raise StateNotReached(
        f"{what} never became {_names(wanted)}: {why} ({target.seconds}).\n"
        f"Statuses seen while polling: {observed}.\n{told}".rstrip()
    )
