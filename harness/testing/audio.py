"""``play_audio``: what the client publishes into a session, on whichever simulator it talks to.

Why a function of the client: audio is what keeps a session from idling out, so a lifecycle test
plays it between two ``/v1`` calls on the same client. The client's target knows the simulator's
controls (in process always; by URL when the admin token was given), so the test need not.
"""

from __future__ import annotations

from typing import Any, Literal

import httpx

from harness.target import target_of

__all__ = ["NoAdminApi", "play_audio"]


class NoAdminApi(LookupError):
    """The client's target has no simulator controls (a deployment, or no admin token)."""


def play_audio(
    client: httpx.Client,
    session_id: str,
    kind: Literal["speech", "silence"] = "speech",
    seconds: float = 5.0,
) -> dict[str, Any]:
    """Publish ``seconds`` of speech or silence into the running session ``session_id`` of the
    simulator ``client`` talks to; answers the session. The idle timer counts from the end of
    the audio; a session not running ignores it.

    Example::

        running = wait_for(api_client, session_id, "running", within=30)
        play_audio(api_client, session_id, "speech", seconds=20)   # no idle timeout for 20 s
    """
    admin = target_of(client).admin
    if admin is None:
        raise NoAdminApi(
            "playing audio needs the simulator's admin API: run in process, or pass "
            "--avatar-sim-admin-token with --avatar-sim-base-url"
        )
    return admin.play_audio(session_id, kind, seconds)
