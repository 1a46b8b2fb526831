"""Witnesses that each misbehaving target (``tests/conformance/misbehaving.py``) misbehaves as it
says, so a run that ends against it proves the run always ends, not that the target was kind."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest

from harness.conformance.inputs import DEFAULT_TRANSPORT
from tests.conformance.misbehaving import (
    ALWAYS_RATE_LIMITED,
    NEVER_ENDING,
    TERMINAL,
    stalling,
)
from tests.conformance.served import served
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-2")

SESSION = {"avatar_id": "av_stock_mock", "transport": dict(DEFAULT_TRANSPORT), "quality": "mock"}


def test_never_ending_sessions_stay_live_and_hold_the_cap() -> None:
    sim = simulated(edits=NEVER_ENDING)
    created = sim.target.request("POST", "/v1/sessions", json_body=SESSION).json()
    session_id = created["id"]
    ended = sim.target.request("POST", f"/v1/sessions/{session_id}/end").json()
    assert ended["status"] == "ending"
    sim.platform.advance(3600)
    # Inside, the session is over; outside, it never is.
    caller = sim.platform.authenticate(f"Bearer {sim.keys['unrestricted']}")
    inside = sim.platform.call("retrieveSession", caller, {"session_id": session_id}).body
    assert isinstance(inside, dict) and inside["status"] in TERMINAL
    for read in (
        sim.target.request("GET", f"/v1/sessions/{session_id}").json(),
        sim.target.request("POST", f"/v1/sessions/{session_id}/end").json(),
        next(s for s in sim.target.request("GET", "/v1/sessions").json()["data"]),
    ):
        assert read["id"] == session_id and read["status"] not in TERMINAL
    again = sim.target.request("POST", "/v1/sessions", json_body=SESSION)
    assert again.status == 429
    assert again.json()["error"]["code"] == "concurrent_sessions"
    assert again.headers["x-request-id"] == again.json()["error"]["request_id"]
    plain = simulated()
    first = plain.target.request("POST", "/v1/sessions", json_body=SESSION).json()["id"]
    assert plain.target.request("POST", f"/v1/sessions/{first}/end").json()["status"] in TERMINAL
    assert plain.target.request("POST", "/v1/sessions", json_body=SESSION).status == 201


def test_every_create_is_rate_limited_with_retry_after_one_second() -> None:
    sim = simulated(edits=ALWAYS_RATE_LIMITED)
    for _ in range(3):
        refused = sim.target.request("POST", "/v1/sessions", json_body=SESSION)
        sim.platform.advance(120)  # however long one waits
        assert refused.status == 429
        error = refused.json()["error"]
        assert (error["type"], error["code"]) == ("rate_limit", "rate_limited")
        assert error["request_id"] == refused.headers["x-request-id"]
        assert refused.headers["retry-after"] == "1"
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"} <= set(
            refused.headers
        )
    assert sim.target.request("GET", "/v1/sessions").json()["data"] == []
    assert sim.target.request("GET", "/v1/models").status == 200  # only creates are refused


def test_a_stalled_request_waits_while_the_server_keeps_serving() -> None:
    stall = 1.5
    with served(time_factor=None, wrap=stalling(stall)) as server:
        answers: list[httpx.Response] = []

        def get() -> None:
            with server.client(timeout=30) as client:
                answers.append(client.get("/v1/models"))

        started = time.monotonic()
        threads = [threading.Thread(target=get) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        took = time.monotonic() - started
    assert [a.status_code for a in answers] == [200, 200]
    assert took >= stall  # each waited its stall ...
    assert took < 2 * stall  # ... side by side: the loop was never blocked


def test_a_server_stalling_thirty_seconds_still_stops_at_once() -> None:
    outcome: dict[str, Any] = {}
    with served(time_factor=None, wrap=stalling(30.0)) as server:

        def get() -> None:
            try:
                with server.client(timeout=60) as client:
                    outcome["answer"] = client.get("/v1/models")
            except httpx.HTTPError as error:
                outcome["error"] = error

        thread = threading.Thread(target=get, daemon=True)
        thread.start()
        time.sleep(0.3)  # the request is in flight, stalled
        stopping = time.monotonic()
    stopped_in = time.monotonic() - stopping
    thread.join(10)
    assert stopped_in < 15, stopped_in  # the graceful bound, far below the 30 s stall
    # uvicorn cancels the stalled request: its client sees a 500 or a dropped connection.
    answer = outcome.get("answer")
    assert (answer is not None and answer.status_code == 500) or "error" in outcome, outcome
