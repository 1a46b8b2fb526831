"""A platform and session traffic that produce every kind of session event, for the tests of the
event log's columns (``test_records_columns``)."""

from __future__ import annotations

from typing import Any

from sim.config import HistoryConfig, SimConfig
from sim.platform import Platform

__all__ = ["barge_in", "drive", "session_platform"]


def session_platform(history: HistoryConfig | None = None) -> tuple[Platform, Any]:
    config = SimConfig(seed=4) if history is None else SimConfig(seed=4, history=history)
    platform = Platform.create(config)
    org = platform.admin.create_organization("Acme", "enterprise")
    caller = platform.authenticate(f"Bearer {org['keys']['unrestricted']}")
    return platform, caller


def barge_in(platform: Platform, caller: Any, body: dict[str, Any]) -> str:
    """A session that starts, hears speech and is interrupted (a barge-in); its id."""
    first = platform.call("createSession", caller, {"body": body}).body
    assert isinstance(first, dict)
    platform.advance(10)
    platform.admin.inject_audio(first["id"], "speech", 6.0)
    platform.advance(2)
    platform.admin.clear_buffer(first["id"])
    return str(first["id"])


def drive(platform: Platform, caller: Any) -> None:
    """Sessions that cover every session event: queued, starting, first frame, barge-in,
    ending, ended, usage, canceled, failed (no capacity and a lost worker)."""
    body = {
        "avatar_id": "av_stock_aria",
        "transport": {"type": "livekit", "url": "wss://x.example", "room_name": "r"},
        "metadata": {"ticket": "Ω-42", "nested": {"b": 1, "a": [True, None, 2.5]}},
    }
    keys = [platform.admin.create_key(caller.org_id)["key"] for _ in range(4)]
    callers = [platform.authenticate(f"Bearer {k}") for k in keys]
    first = barge_in(platform, caller, body)
    platform.call("endSession", caller, {"session_id": first})
    canceled = platform.call("createSession", callers[0], {"body": body}).body
    assert isinstance(canceled, dict)
    platform.call("endSession", callers[0], {"session_id": canceled["id"]})
    lost = platform.call("createSession", callers[1], {"body": body}).body
    assert isinstance(lost, dict)
    platform.advance(20)
    platform.sessions.faults.crash_worker(session_id=lost["id"])
    platform.sessions.faults.set_capacity(0)
    platform.call("createSession", callers[2], {"body": body})
    platform.advance(60)
