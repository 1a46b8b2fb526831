"""Only values every answer can carry back get in, through either door (ERR-1, ERR-4, GAP-ERR-6).

Reported: an escaped lone surrogate (``"\\ud800"``) in ``transport.room_name`` or a run's
``external_id`` answered 500 after the object was stored, and from then on the organization's
list answered 500 and the session held its concurrency slot; ``1e999`` in metadata was stored and
echoed as ``Infinity``, which is not JSON. Now such a value is refused with 400 before anything
is stored, naming the field, with the same type, code, param and message through HTTP and
through ``Platform.call``; the organization's lists keep working and its slot stays free.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import InvalidRequest
from sim.values import _check, check_values
from tests.asgi.doors import Doors, Request
from tests.asgi.support import strict_json
from tests.world import LIVEKIT, session_body

SESSION = session_body()


def _session(**changes: Any) -> dict[str, Any]:
    body = json.loads(json.dumps(SESSION))
    body.update(changes)
    return body


BAD_VALUES = [
    pytest.param(
        "createSession",
        {},
        _session(transport={**LIVEKIT, "room_name": "room-\ud800"}),
        ("value.invalid_string", "transport.room_name"),
        id="surrogate-room-name",
    ),
    pytest.param(
        "createSession",
        {},
        _session(metadata={"note": ["ok", "\udfff"]}),
        ("value.invalid_string", "metadata.note.1"),
        id="surrogate-in-metadata-list",
    ),
    pytest.param(
        "createSession",
        {},
        _session(metadata={"\ud83d": 1}),
        ("value.invalid_string", "metadata"),
        id="surrogate-metadata-key",
    ),
    pytest.param(
        "createSession",
        {},
        _session(metadata={"score": float("inf")}),
        ("value.invalid_number", "metadata.score"),
        id="infinite-metadata",
    ),
    pytest.param(
        "createSession",
        {},
        _session(idle_timeout_seconds=float("-inf")),
        ("value.invalid_number", "idle_timeout_seconds"),
        id="infinite-timeout",
    ),
    pytest.param(
        "createSession",
        {},
        _session(metadata={"big": 10**400}),
        ("value.invalid_number", "metadata.big"),
        id="integer-beyond-doubles",
    ),
    pytest.param(
        "createRun",
        {"model_id": "sim/echo-text"},
        {"input": {"prompt": "hi"}, "external_id": "\ud800"},
        ("value.invalid_string", "external_id"),
        id="surrogate-external-id",
    ),
    pytest.param(
        "createRun",
        {"model_id": "sim/echo-text"},
        {"input": {"prompt": "hi"}, "metadata": {"x": float("inf")}},
        ("value.invalid_number", "metadata.x"),
        id="infinite-run-metadata",
    ),
    pytest.param(
        "createPipecatSession",
        {},
        {"avatar_id": "av_stock_\udc80"},
        ("value.invalid_string", "avatar_id"),
        id="surrogate-pipecat-avatar",
    ),
    pytest.param(
        "createSession",
        {},
        _session(metadata={"deep": json.loads("[" * 70 + "]" * 70)}),
        ("value.too_deep", "metadata.deep" + ".0" * 62),  # the 64th level holds a 65th
        id="too-deep",
    ),
]  # fmt: skip


@pytest.mark.req("ERR-1", "ERR-4", "SIM-7", "EP-SESS-1", "EP-RUN-1", "EP-PIPE-1")
@pytest.mark.parametrize(("operation", "params", "body", "expected"), BAD_VALUES)
def test_a_value_json_cannot_carry_back_is_refused_by_both_doors_and_stores_nothing(
    operation: str, params: dict[str, Any], body: Any, expected: tuple[str, str]
) -> None:
    doors = Doors()
    python, http = doors.both(Request(operation, params, body))
    assert python == http
    kind, code, param, message = http["error"]
    assert (kind, code, param) == ("invalid_request", *expected)
    assert param is not None and param.split(".")[0] in message
    for platform in (doors.python, doors.served):
        assert platform.sessions.sessions() == []
        assert platform.runs.runs() == []
        assert all(e.run_id is None and e.session_id is None for e in platform.billing.entries())
    # The organization is untouched: its lists answer valid JSON and its slot is free.
    for listing in ("listSessions", "listRuns"):
        response = doors.send(Request(listing, {}, has_body=False))
        assert response.status_code == 200
        assert strict_json(response.text)["data"] == []
    created = doors.send(Request("createSession", {}, _session()))
    assert created.status_code == 201, created.text


@pytest.mark.req("ERR-1", "ERR-4")
@pytest.mark.parametrize(
    ("value", "code"),
    [
        (float("nan"), "value.invalid_number"),
        ({1, 2}, "value.invalid_type"),
        (b"raw bytes", "value.invalid_type"),
        (object(), "value.invalid_type"),
        ({3: "an integer key"}, "value.invalid_type"),
    ],
)
def test_the_python_api_refuses_what_is_not_json_at_all(value: Any, code: str) -> None:
    doors = Doors()
    answer = doors.by_python(Request("createSession", {}, _session(metadata={"x": value})))
    kind, got, param, _ = answer["error"]
    assert (kind, got) == ("invalid_request", code)
    assert param == "metadata.x"
    assert doors.python.sessions.sessions() == []


@pytest.mark.req("ERR-1", "EP-RUN-1")
def test_large_finite_numbers_are_kept_exactly() -> None:
    doors = Doors()
    body = {"input": {"prompt": "hi"}, "metadata": {"big": 10**300, "small": -1.5e300}}
    python, http = doors.both(Request("createRun", {"model_id": "sim/echo-text"}, body))
    assert python["metadata"] == http["metadata"] == body["metadata"]


_ANY = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), float("inf"), float("nan"), 1.5, -0.0])
    | st.text(max_size=6)
    | st.sampled_from(["\ud800", "a\udfffb", b"bytes", (1, 2)]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4) | st.sampled_from(["\udc80", 7]), inner, max_size=3)
    ),
    max_leaves=10,
)


def _refusal(check: Any) -> tuple[str, str | None, str] | None:
    try:
        check()
    except InvalidRequest as error:
        return error.code, error.param, error.message
    return None


@pytest.mark.req("ERR-1")
@settings(max_examples=300, deadline=None)
@given(value=_ANY, depth=st.integers(1, 4), name=st.sampled_from(["body", "limit", "image"]))
def test_check_values_refuses_each_parameter_as_the_full_check_does(
    value: Any, depth: int, name: str
) -> None:
    """Whatever the value, ``check_values`` refuses a parameter exactly as the full check does
    at that parameter's path (the body's fields from the body, any other by its name), the
    upload's bytes aside, which are raw by design."""
    got = _refusal(lambda: check_values({name: value}, max_depth=depth))
    if name == "image" and isinstance(value, bytes):
        assert got is None
        return
    assert got == _refusal(lambda: _check(value, () if name == "body" else (name,), depth))
