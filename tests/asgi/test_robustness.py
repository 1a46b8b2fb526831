"""Properties: arbitrary input never crashes the facade or changes state (ERR-1, HAR-1).

Hypothesis throws random bytes, media types, query strings and header values at the app; every
answer must be the envelope (or a success for the rare valid request), never a 500, and a refused
request must leave the platform exactly as it was.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.asgi.validation import coerce
from sim.platform import Platform
from tests.asgi.doors import Doors, Request
from tests.asgi.support import ENVELOPE_KEYS, make_org

_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _setup() -> tuple[Platform, httpx.Client, dict[str, str]]:
    platform = Platform.create()
    org = make_org(platform, "Props", "enterprise")
    client = httpx.Client(
        transport=SyncASGITransport(create_app(platform)), base_url="http://testserver"
    )
    return platform, client, org.auth()


PLATFORM, CLIENT, AUTH = _setup()


def _is_envelope(response: httpx.Response) -> bool:
    body = response.json()
    return (
        set(body) == {"error"}
        and set(body["error"]) == ENVELOPE_KEYS
        and (body["error"]["request_id"] == response.headers["x-request-id"])
    )


def _state() -> str:
    return json.dumps(
        [PLATFORM.sessions.render(s.id) for s in PLATFORM.sessions.sessions()]
        + [repr(r) for r in PLATFORM.runs.runs()]
    )


@pytest.mark.req("ERR-1", "HAR-1", "CONV-3")
@_SETTINGS
@given(
    body=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=200).map(str.encode),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=10),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=8), inner, max_size=4)
            ),
            max_leaves=12,
        ).map(lambda v: json.dumps(v).encode()),
    ),
    content_type=st.sampled_from(
        [
            None,
            "application/json",
            "text/plain",
            "multipart/form-data",
            "application/json; charset=utf-16",
            "application/x-www-form",
        ]
    ),
    path=st.sampled_from(
        ["/v1/sessions", "/v1/pipecat/sessions", "/v1/run/sim/echo-text", "/v1/avatars"]
    ),
)
def test_arbitrary_bodies_get_the_envelope_and_change_nothing(
    body: bytes, content_type: str | None, path: str
) -> None:
    before = _state()
    headers = dict(AUTH)
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = CLIENT.post(path, content=body, headers=headers)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert _is_envelope(response)
        assert _state() == before


@pytest.mark.req("ERR-1", "LIM-7", "HAR-1")
@_SETTINGS
@given(
    query=st.lists(
        st.tuples(
            st.sampled_from(
                ["limit", "starting_after", "status", "scope", "q", "period", "timezone", "x"]
            ),
            st.text(max_size=12),
        ),
        max_size=4,
    ),
    path=st.sampled_from(["/v1/sessions", "/v1/avatars", "/v1/runs", "/v1/assets", "/v1/usage"]),
)
def test_arbitrary_query_strings_answer_200_or_the_envelope(
    query: list[tuple[str, str]], path: str
) -> None:
    response = CLIENT.get(path, params=tuple(query), headers=AUTH)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert _is_envelope(response)
    else:
        body = response.json()
        assert body.get("object") == "list" or "credits_charged" in body


@pytest.mark.req("ERR-1", "AUTH-3")
@_SETTINGS
@given(value=st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255), max_size=80))
def test_arbitrary_authorization_headers_answer_401(value: str) -> None:
    response = CLIENT.get("/v1/models", headers=[(b"Authorization", value.encode("latin-1"))])
    assert response.status_code == 401
    assert _is_envelope(response)


@pytest.mark.req("CONV-4")
@_SETTINGS
@given(number=st.integers(min_value=-(10**40), max_value=10**40))
def test_integer_strings_coerce_exactly(number: int) -> None:
    assert coerce(str(number), {"type": "integer"}) == number
    assert coerce(f"{number}x", {"type": "integer"}) == f"{number}x"


@pytest.mark.req("EP-SESS-1", "SIM-7")
def test_integral_floats_become_ints_only_where_the_schema_says_integer() -> None:
    """JSON has one number type: ``60.0`` is the integer 60 where an integer is due (the domain
    reads it so, through either door), while free-form metadata keeps exactly what was sent."""
    doors = Doors()
    body: dict[str, Any] = {
        "avatar_id": "av_stock_mock",
        "idle_timeout_seconds": 60.0,
        "max_duration_seconds": 120.0,
        "metadata": {"x": 2.0},
        "transport": {"type": "livekit", "url": "wss://r.example", "room_name": "r"},
    }
    python, http = doors.both(Request("createSession", {}, body))
    assert python == http
    for answer in (python, http):
        assert answer["idle_timeout_seconds"] == 60
        assert isinstance(answer["idle_timeout_seconds"], int)
        assert isinstance(answer["max_duration_seconds"], int)
        assert isinstance(answer["metadata"]["x"], float)
    half = doors.both(Request("createSession", {}, {**body, "idle_timeout_seconds": 60.5}))
    assert half[0] == half[1]
    assert half[0]["error"][1:3] == ["validation.type", "idle_timeout_seconds"]
