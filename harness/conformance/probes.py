"""Small requests the scenario checks share: a usable avatar, a session body, ending sessions.

Why here and not in each check: every check that creates a session must pick an avatar the key
can use, send a body the contract accepts, and end what it created (a deployment bills sessions,
and the per-key concurrency cap is one), the same way each time.
"""

from __future__ import annotations

from typing import Any

from harness.conformance.checks import CheckFailed, Skipped
from harness.conformance.target import Exchange, Target

__all__ = [
    "TERMINAL",
    "create_session",
    "end_quietly",
    "expect_status",
    "ready_avatar",
    "session_body",
]

#: The seed's terminal session states.
TERMINAL = frozenset({"ended", "failed", "canceled"})


def expect_status(exchange: Exchange, *statuses: int, what: str) -> Any:
    """The JSON body when the status is one of ``statuses`` (2xx when none), else a failure."""
    ok = exchange.status in statuses if statuses else 200 <= exchange.status < 300
    if not ok:
        wanted = "/".join(map(str, statuses)) or "2xx"
        raise CheckFailed(
            f"{what}: expected {wanted}, got {exchange.status}: {exchange.body[:300]!r}", exchange
        )
    return exchange.json()


def ready_avatar(target: Target) -> str:
    """An avatar the key may start sessions with: a ready one, a mock runtime preferred."""
    listed = target.request("GET", "/v1/avatars", params={"limit": 100}, operation="listAvatars")
    body = expect_status(listed, what="GET /v1/avatars")
    avatars = [
        a for a in body.get("data", []) if isinstance(a, dict) and a.get("status") == "ready"
    ]
    if not avatars:
        raise Skipped("the key can see no ready avatar to start a session with")
    avatars.sort(key=lambda a: (a.get("runtime_type") != "mock", not a.get("is_demo", False)))
    return str(avatars[0]["id"])


def session_body(avatar_id: str, room: str, **extra: Any) -> dict[str, Any]:
    """A minimal valid create body (quality ``mock``, the cheapest tier)."""
    return {
        "avatar_id": avatar_id,
        "transport": {"type": "livekit", "url": "wss://conformance.invalid", "room_name": room},
        "quality": "mock",
        **extra,
    }


def create_session(
    target: Target, body: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[Exchange, dict[str, Any]]:
    """Create a session; a refusal for capacity or rate skips the calling check."""
    exchange = target.request(
        "POST", "/v1/sessions", json_body=body, headers=headers, operation="createSession"
    )
    if exchange.status in (402, 429, 503):
        raise Skipped(f"the target refused to create a session now ({exchange.status})")
    session = expect_status(exchange, what="POST /v1/sessions")
    if not isinstance(session, dict) or not str(session.get("id", "")).startswith("sess_"):
        raise CheckFailed(f"a created session has no sess_ id: {session!r}", exchange)
    return exchange, session


def end_quietly(target: Target, session_id: str) -> None:
    """End a session the harness created, whatever state it is in (cleanup, never judged)."""
    target.request("POST", f"/v1/sessions/{session_id}/end", operation="endSession")
