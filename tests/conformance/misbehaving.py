"""Targets that misbehave so that a conformance run must still end, however broken the
target.

Each is the real facade behind an edit or a wrapper, usable in process
(``tests.conformance.support.simulated(edits=...)`` or ``wrap=...``) and over HTTP
(``tests.conformance.served.served(edits=...)`` or ``wrap=...``):

* ``NEVER_ENDING``: no session ever ends. ``end`` answers the session ``ending``, and every later
  read (retrieve, list, end again) shows it non-terminal whatever happened inside; a key that has
  made a session is refused every later create with 429 ``concurrent_sessions``, since from the
  outside its session is still live. ``never_ending(status)`` picks the status shown.
* ``ALWAYS_RATE_LIMITED``: every ``POST /v1/sessions`` is refused with 429 ``rate_limit``,
  ``Retry-After: 1``, the ``X-RateLimit-*`` headers, the envelope and an ``X-Request-Id``.
* ``stalling(seconds=30)``: a wrapper that waits ``seconds`` (``asyncio.sleep``, so the server
  loop keeps serving other requests) before handing every HTTP request to the facade.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.conformance.edits import (
    App,
    Call,
    Edits,
    Keys,
    Receive,
    Reply,
    Scope,
    Send,
    objects,
)

__all__ = [
    "ALWAYS_RATE_LIMITED",
    "NEVER_ENDING",
    "TERMINAL",
    "always_rate_limited",
    "never_ending",
    "stalling",
]

TERMINAL = frozenset({"ended", "failed", "canceled"})
_CREATES = ("/v1/sessions", "/v1/pipecat/sessions")


def _is_create(call: Call) -> bool:
    return call.method == "POST" and call.path in _CREATES


# -- sessions that never end -------------------------------------------------------------------


def _hold_the_cap(call: Call) -> None:
    """A key whose session never ends stays at its cap of one."""
    held: dict[str, list[str]] = call.state.setdefault("sessions_by_key", {})
    if _is_create(call) and held.get(call.header("authorization") or ""):
        call.refuse(
            429,
            "quota_exceeded",
            "concurrent_sessions",
            "This API key already has 1 active session(s); end one first.",
            None,
        )
        assert call.answer is not None
        call.answer.set_header("Retry-After", "1")


def _remember_created(call: Call, reply: Reply) -> None:
    body = reply.json()
    if not _is_create(call) or call.answer is not None or not 200 <= reply.status < 300:
        return
    session = body.get("session") if call.path == "/v1/pipecat/sessions" else body
    if isinstance(session, dict) and isinstance(session.get("id"), str):
        held: dict[str, list[str]] = call.state.setdefault("sessions_by_key", {})
        held.setdefault(call.header("authorization") or "", []).append(session["id"])


def never_ending(status: str = "ending") -> Edits:
    """Every session shown terminal inside is shown as ``status`` instead, and the cap holds."""
    if status in TERMINAL:
        raise ValueError(f"{status!r} is terminal")

    def shown_live(call: Call, reply: Reply) -> None:
        body = reply.json()
        changed = False
        for item in objects(body):
            if item.get("object") == "session" and item.get("status") in TERMINAL:
                item["status"] = status
                item["error"] = None
                changed = True
        if changed:
            reply.set_json(body)

    return Edits(request=(_hold_the_cap,), response=(_remember_created, shown_live))


NEVER_ENDING = never_ending()


# -- every create rate limited -------------------------------------------------------------------


def always_rate_limited(retry_after: int = 1, limit: int = 10) -> Edits:
    """Every ``POST /v1/sessions`` refused as over the create rate limit."""

    def refuse(call: Call) -> None:
        if call.method != "POST" or call.path != "/v1/sessions":
            return
        call.refuse(429, "rate_limit", "rate_limited", "Too many session creates.", None)
        assert call.answer is not None
        call.answer.set_header("Retry-After", str(retry_after))
        call.answer.set_header("X-RateLimit-Limit", str(limit))
        call.answer.set_header("X-RateLimit-Remaining", "0")
        call.answer.set_header("X-RateLimit-Reset", str(retry_after))  # seconds from now

    return Edits(request=(refuse,))


ALWAYS_RATE_LIMITED = always_rate_limited()


# -- every request stalls ----------------------------------------------------------------------


class _Stalling:
    def __init__(self, app: App, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(self.seconds)
        await self.app(scope, receive, send)


def stalling(seconds: float = 30.0) -> Callable[[App, Keys], App]:
    """A ``wrap`` that stalls every HTTP request ``seconds`` before the facade answers it."""

    def wrap(app: App, keys: Keys) -> App:
        return _Stalling(app, seconds)

    return wrap
