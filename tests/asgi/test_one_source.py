"""One source for every limit, and one answer per request whichever door (SIM-6, SIM-7).

* ``spec/openapi.yaml`` writes each configurable request bound with the seed's value and names
  its configuration field (``x-config``); the facade validates with the running configuration's
  values (``sim.asgi.configured``). With the default configuration the two documents are equal,
  and every configuration field that bounds a request is named by the spec.
* Reported: with ``idle_timeout_max_seconds: 1200`` the Python API accepted 900 and HTTP refused
  it with the spec's hard-coded 600, and the two doors worded their refusals differently. Now
  hypothesis throws valid and broken requests (bodies, query parameters, scoped keys) at both
  doors, under the seed's limits and under other ones: the answers are equal, success bodies and
  refusals alike (type, code, param and message).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.asgi.configured import config_value, configured, configured_keywords
from sim.asgi.openapi import load_openapi
from sim.config import LimitsConfig, RateLimitConfig, SimConfig
from tests.asgi.doors import Doors, Request
from tests.world import LIVEKIT, session_body

#: Every configuration field that bounds what a request may carry.
REQUEST_BOUNDS = {
    "limits.idle_timeout_min_seconds",
    "limits.idle_timeout_max_seconds",
    "limits.idle_timeout_default_seconds",
    "limits.max_duration_min_seconds",
    "limits.max_duration_ceiling_seconds",
    "limits.max_duration_default_seconds",
    "limits.metadata_max_bytes",
    "limits.idempotency_key_min_length",
    "limits.idempotency_key_max_length",
    "limits.page_size_min",
    "limits.page_size_max",
    "limits.page_size_default",
    "limits.avatar_page_size_default",
    "limits.run_events_page_size_max",
    "limits.run_events_page_size_default",
    "limits.cursor_max_length",
    "avatars.name_max_length",
    "avatars.query_max_length",
    "billing.usage_timezone_max_length",
    "runs.external_id_max_length",
}


@pytest.mark.req("SIM-6")
def test_the_spec_writes_the_default_configuration_and_names_every_request_bound() -> None:
    spec = dict(load_openapi())
    assert configured(spec, SimConfig()) == spec  # every x-config value is the default
    named = {dotted for _, _, dotted in configured_keywords(spec)}
    assert named == REQUEST_BOUNDS


@pytest.mark.req("SIM-6", "SIM-7", "EP-SESS-1")
def test_the_facade_validates_with_the_running_configuration() -> None:
    limits = LimitsConfig(idle_timeout_max_seconds=1200, page_size_max=50)
    doors = Doors(SimConfig(limits=limits))
    spec = doors.app.state.route_table.schemas.document
    idle = spec["components"]["schemas"]["CreateSessionRequest"]["properties"]
    assert idle["idle_timeout_seconds"]["maximum"] == 1200
    body = session_body(idle_timeout_seconds=900)
    python, http = doors.both(Request("createSession", {}, body))
    assert python["idle_timeout_seconds"] == http["idle_timeout_seconds"] == 900
    too_long = {**body, "idle_timeout_seconds": 1201}
    python, http = doors.both(Request("createSession", {}, too_long))
    assert python == http
    assert http["error"] == [
        "unprocessable",
        "validation.range",
        "idle_timeout_seconds",
        "`idle_timeout_seconds` must be from 1 to 1200.",
    ]
    python, http = doors.both(Request("listSessions", {"limit": 51}, has_body=False))
    assert python == http and http["error"][1:3] == ["validation.range", "limit"]
    assert config_value(doors.config, "limits.page_size_max") == 50


# -- both doors, any request -------------------------------------------------------------------

_SESSION_BODY = session_body()
_ECHO = {"model_id": "sim/echo-text"}
_EVENTS = {"run_id": "run_01JAAAAAAAAAAAAAAAAAAAAAAA"}

#: Requests the two doors once answered differently (type, code, param or message).
ONCE_APART = [
    Request("createSession", {}, {**_SESSION_BODY, "avatar_id": ""}),
    Request("createSession", {}, {**_SESSION_BODY, "avatar_id": "x"}),
    Request("createSession", {}, {**_SESSION_BODY, "transport": {}}),
    Request("createSession", {}, {**_SESSION_BODY, "idle_timeout_seconds": 60.0}),
    Request("createSession", {}, {**_SESSION_BODY, "transport": {**LIVEKIT, "type": 5}}),
    Request("createSession", {}, {**_SESSION_BODY, "transport": {**LIVEKIT, "url": ""}}),
    Request("createSession", {}, {**_SESSION_BODY, "transport": {**LIVEKIT, "url": "wss://\n"}}),
    Request("createSession", {}, {**_SESSION_BODY, "zzz": 1, "idle_timeout_seconds": 0}),
    Request("createSession", {}, {"transport": {"type": "x"}, "quality": "bad"}),
    Request("createSession", {}, {**_SESSION_BODY, "metadata": {"_avatar.x": 1}, "zz": 0}),
    Request("createSession", {}, {**_SESSION_BODY, "idle_timeout_seconds": 0}, key="runs_read"),
    Request("createPipecatSession", {}, {"avatar_id": "av_stock_mock", "max_duration_seconds": 9.}),
    Request("createRun", _ECHO, {"input": {"prompt": "x"}, "operation": ""}),
    Request("createRun", _ECHO, {"input": {"prompt": "x"}, "external_id": None}),
    Request("createRun", _ECHO, {"input": {"prompt": "x"}, "metadata": None}),
    Request("createRun", _ECHO, {"input": {"x": 1}, "metadata": {"_avatar.y": 1}}),
    Request("createRun", {"model_id": "nobody/nothing"}, {"input": 5}),
    Request("listRuns", {"starting_after": "run_x"}, has_body=False),
    Request("listSessions", {"limit": "ten"}, has_body=False),
    Request("listSessions", {"limit": 0}, has_body=False, key="runs_read"),
    Request("getUsage", {"timezone": "x" * 65}, has_body=False),
    Request("getUsage", {"period": "bad"}, has_body=False),
    Request("listAvatars", {"scope": "bad", "q": ""}, has_body=False),
    Request("listRunEvents", {**_EVENTS, "limit": 501}, has_body=False),
    Request("getRunStatus", {"run_id": "nope"}, has_body=False, key="runs_write"),
]  # fmt: skip


@pytest.mark.req("SIM-7", "ERR-4", "EP-SESS-1", "EP-SESS-2", "EP-SESS-3", "EP-RUN-1", "LIM-7")
@pytest.mark.parametrize("request_", ONCE_APART, ids=range(len(ONCE_APART)))
def test_requests_the_doors_once_answered_differently_now_get_one_answer(
    request_: Request,
) -> None:
    python, http = Doors().both(request_)
    assert python == http


_NO_RATE_LIMITS = RateLimitConfig(
    session_creates_per_window=None,
    run_creates_per_window=None,
    avatar_creates_per_window=None,
    run_deletes_per_window=None,
)
CONFIGS = {
    "seed-limits": SimConfig(limits=LimitsConfig(rate=_NO_RATE_LIMITS)),
    "other-limits": SimConfig(
        limits=LimitsConfig(
            rate=_NO_RATE_LIMITS,
            idle_timeout_max_seconds=1200,
            max_duration_ceiling_seconds=7200,
            page_size_max=40,
            run_events_page_size_max=250,
            metadata_max_bytes=1024,
            idempotency_key_max_length=16,
            cursor_max_length=30,
        )
    ),
}
DOORS = {name: Doors(config) for name, config in CONFIGS.items()}

_SCALARS = st.sampled_from(
    [
        *(None, None, None, True, False, 0, 1, -1, 30, 59.0, 59.5, 600, 601, 900, 1200, 1201),
        *(3600, 3601, 7201, "", "x", "livekit", "websocket", "mock", "pro", "ultra"),
        *("wss://r.example", "https://r", [], {}, ["a"], {"k": "v"}, "a" * 300),
    ]
).map(copy.deepcopy)
_SESSION_KEYS = ["avatar_id", "transport", "idle_timeout_seconds", "max_duration_seconds"]
_SESSION_KEYS += ["metadata", "quality", "colour"]
_PIPECAT_KEYS = ["avatar_id", "idle_timeout_seconds", "max_duration_seconds", "quality"]
_PIPECAT_KEYS += ["relay_type", "metadata"]
_RUN_KEYS = ["input", "operation", "external_id", "metadata", "quality"]
_TRANSPORT_KEYS = st.sampled_from(
    ["type", "url", "room_name", "worker_token", "audio_source", "extra"]
)
_METADATA = st.sampled_from(
    [
        {},
        {"a": 1},
        {"_avatar.debug_record": True},
        {"_avatar.debug_record": "yes"},
        {"_avatar.other": 1, "b": 2},
        {"big": "x" * 1500},
        {"big": "x" * 9000},
        [1],
        None,
    ]
).map(copy.deepcopy)


@st.composite
def _body(draw: st.DrawFn, base: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["set", "delete", "transport", "metadata"]))
        if action == "set":
            body[draw(st.sampled_from(keys))] = draw(_SCALARS)
        elif action == "delete" and body:
            body.pop(draw(st.sampled_from(sorted(body))))
        elif action == "transport":
            transport = body.get("transport")
            if isinstance(transport, dict):
                if draw(st.booleans()):
                    transport[draw(_TRANSPORT_KEYS)] = draw(_SCALARS)
                else:
                    transport.pop(draw(_TRANSPORT_KEYS), None)
        else:
            body["metadata"] = draw(_METADATA)
    return body


_SESSION = session_body()
_LIMITS = st.sampled_from([0, 1, 20, 40, 41, 100, 101, 250, 251, 500, 501, -3, "ten"])


@st.composite
def _request(draw: st.DrawFn) -> Request:
    key = draw(st.sampled_from(["unrestricted"] * 6 + ["runs_read", "runs_write"]))
    kind = draw(st.sampled_from(["session", "pipecat", "run", "list", "usage", "events"]))
    if kind == "session":
        idempotency = draw(st.sampled_from([None, "k1", "a-key-longer-than-16"]))
        body = draw(_body(_SESSION, _SESSION_KEYS))
        return Request("createSession", {}, body, key=key, idempotency_key=idempotency)
    if kind == "pipecat":
        body = draw(_body({"avatar_id": "av_stock_mock"}, _PIPECAT_KEYS))
        return Request("createPipecatSession", {}, body, key=key)
    if kind == "run":
        body = draw(_body({"input": {"prompt": "hello"}}, _RUN_KEYS))
        return Request("createRun", {"model_id": "sim/echo-text"}, body, key=key)
    if kind == "list":
        operation = draw(st.sampled_from(["listSessions", "listRuns", "listAssets", "listAvatars"]))
        params: dict[str, Any] = {}
        if draw(st.booleans()):
            params["limit"] = draw(_LIMITS)
        if draw(st.booleans()):
            params["starting_after"] = draw(
                st.sampled_from(["run_x", "x" * 35, "sess_01JAAAAAAAAAAAAAAAAAAAAAAA", ""])
            )
        return Request(operation, params, has_body=False, key=key)
    if kind == "usage":
        params = draw(
            st.sampled_from(
                [
                    {"period": "current_month"},
                    {"period": "last_year"},
                    {"timezone": "Europe/Paris"},
                    {"timezone": "Mars/Olympus"},
                    {"timezone": "x" * 70},
                    {"period_start": "2026-01-01T00:00:00Z"},
                    {"period_start": "2026-01-01T00:00:00Z", "period_end": "2025-01-01T00:00:00Z"},
                ]
            )
        )
        return Request("getUsage", params, has_body=False, key=key)
    params = {"run_id": "run_01JAAAAAAAAAAAAAAAAAAAAAAA", "limit": draw(_LIMITS)}
    return Request("listRunEvents", params, has_body=False, key=key)


@pytest.mark.req("SIM-7", "SIM-6", "ERR-4", "EP-SESS-1", "EP-PIPE-1", "EP-RUN-1", "LIM-7")
@pytest.mark.parametrize("config", sorted(CONFIGS))
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=_request())
def test_both_doors_give_the_same_answer_to_any_request(config: str, request: Request) -> None:
    python, http = DOORS[config].both(request)
    assert python == http, request
