"""The events table's columns carry everything an event's JSON says (NB-2, PERF-2, EV-1).

A session event's payload is its session as it was (the row of ``sessions`` shown with the
event's status and usage) and the fields its type declares (``SESSION_EVENTS``); every other
event's payload is in ``payload``. Rebuilt from the tables alone, each event's data is exactly
what the API and the webhooks render for it (its JSON, which the events table carried as text
before it had these columns).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from harness.runner import play
from harness.runner.tables import RunResult, collect
from sim.lifecycle import FAILURE_MESSAGES
from sim.platform import Platform
from sim.sessions.events import SESSION_EVENTS
from sim.sessions.records import NO_FRAME, NOT_PLACED
from sim.sessions.validation import TRANSPORT_KEYS
from tests.scenarios.helpers import scenario

_TALK = {
    "speech": {"kind": "exponential", "mean": 4},
    "silence": {"kind": "exponential", "mean": 2},
}


def _stamp(moment: Any) -> str | None:
    """The API's timestamp of an instant of the tables (``Clock.timestamp``: milliseconds)."""
    if pd.isna(moment):
        return None
    return str(moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]) + "Z"


def _value(value: Any) -> Any:
    return None if pd.isna(value) else value


def _session_data(event: pd.Series, session: pd.Series, platform: Platform) -> dict[str, Any]:
    """A session event's ``data``, from its row of ``events`` and its session's of
    ``sessions``."""
    status = event["status"]
    transport = {"type": session["transport"]}
    for key in TRANSPORT_KEYS[1:]:
        if not pd.isna(session[f"transport_{key}"]):
            transport[key] = session[f"transport_{key}"]
    failed = status == "failed" and not pd.isna(session["error_code"])
    usage = {"billable_seconds": int(event["billable_seconds"]), "frames": int(event["frames"])}
    body = {
        "id": session["session_id"],
        "object": "session",
        "avatar_id": session["avatar_id"],
        "status": status,
        "quality": session["quality"],
        "billing_surface": session["surface"],
        "transport": transport,
        "idle_timeout_seconds": int(session["idle_timeout_seconds"]),
        "max_duration_seconds": int(session["max_duration_seconds"]),
        "metadata": {} if pd.isna(session["metadata"]) else json.loads(session["metadata"]),
        "created_at": _stamp(session["created_at"]),
        "started_at": None if status in NOT_PLACED else _stamp(session["started_at"]),
        "first_frame_at": None if status in NO_FRAME else _stamp(session["first_frame_at"]),
        "usage": usage,
        "error": (
            {"code": session["error_code"], "message": FAILURE_MESSAGES[session["error_code"]]}
            if failed
            else None
        ),
    }
    data: dict[str, Any] = {"object": body}
    fields = SESSION_EVENTS[event["type"]]
    if fields.field is not None:
        data[fields.field] = _value(event[fields.field])
    if fields.tracks:
        data["tracks"] = list(platform.sessions.published_tracks)
    if fields.usage:
        data["usage"] = usage
    if fields.rpc:
        data["rpc"] = platform.config.sessions.barge_in_rpc
    return data


def rebuilt(result: RunResult, platform: Platform) -> list[dict[str, Any]]:
    """Every event's ``data``, rebuilt from the run's tables alone."""
    sessions = result.sessions.set_index("session_id", drop=False)
    out = []
    for _, event in result.events.iterrows():
        if event["object_type"] == "session" and pd.isna(event["payload"]):
            out.append(_session_data(event, sessions.loc[event["object_id"]], platform))
        else:
            out.append(json.loads(event["payload"]))
    return out


def _run(cooldown: str) -> tuple[RunResult, Platform, list[dict[str, Any]]]:
    """A run with talk-spurt audio and every kind of event: with no cooldown some sessions are
    still live, and one of them has just been barged in on."""
    live = play(
        scenario(
            cooldown=cooldown,
            sessions={"length": {"kind": "exponential", "mean": 120}, "audio": _TALK},
        )
    )
    running = [s for s in live.platform.sessions.store.live_states() if s.status == "running"]
    if running:
        live.platform.sessions.clear_buffer(running[0].id)
    rendered = [json.loads(json.dumps(dict(e.data))) for e in live.platform.kernel.events]
    return collect(live.hand_over(), release=True), live.platform, rendered


@pytest.mark.req("NB-2", "PERF-2", "EV-1")
@pytest.mark.parametrize("cooldown", ["0s", "5m"])
def test_each_events_data_is_rebuilt_from_the_tables(cooldown: str) -> None:
    result, platform, rendered = _run(cooldown)
    events = result.events
    if cooldown == "0s":
        assert "session.barge_in" in set(events["type"])
    assert {"session.ended", "session.usage", "session.ending", "run.succeeded"} <= set(
        events["type"]
    )
    assert rebuilt(result, platform) == rendered
