"""What the harness sends and how it spends time: the user's inputs, discovery, waiting, pacing."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import httpx
import pytest

from harness.conformance.checks import Incomplete
from harness.conformance.clock import QuickClock, RealClock, line_display
from harness.conformance.context import Context
from harness.conformance.inputs import Inputs
from harness.conformance.instances import minimal_instance
from harness.conformance.pacing import KeyPacer, retry_hint
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Exchange
from sim.runs.catalog import CATALOG
from tests.conformance.edits import Call, Edits
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-2")

REAL_ROOM = {
    "url": "wss://rooms.example.org",
    "room_name": "qa-room",
    "worker_token": "tok-123456789",
}


def _sent(sim: Any) -> list[Exchange]:
    seen: list[Exchange] = []
    sim.target.observers.append(seen.append)
    return seen


def test_the_given_transport_avatar_and_model_are_what_the_run_sends() -> None:
    sim = simulated(roles=("admin",))
    seen = _sent(sim)
    inputs = Inputs(transport=REAL_ROOM, avatar_id="av_stock_aria", models=("sim/speech",))
    only = frozenset({"session_lifecycle", "run_lifecycle", "worker_token_hidden"})
    report = run(sim.target, RunOptions(max_examples=0, inputs=inputs, only=only))
    assert report.failed_names() == [], report.summary()
    creates = [
        json.loads(e.request_body) for e in seen if e.path == "/v1/sessions" and e.method == "POST"
    ]
    assert creates and all(c["avatar_id"] == "av_stock_aria" for c in creates)
    assert all(c["transport"] == {"type": "livekit", **REAL_ROOM} for c in creates)
    assert not any(e.path == "/v1/avatars" and e.method == "GET" for e in seen)
    runs = {e.path for e in seen if e.method == "POST" and e.path.startswith("/v1/run/")}
    assert runs == {"/v1/run/sim/speech"}
    assert report.result("worker_token_hidden").applied > 0


def test_a_create_carries_every_field_the_seed_lists() -> None:
    ctx = Context(simulated().target)
    body = ctx.session_body("x")
    assert set(body) == {
        "avatar_id", "transport", "idle_timeout_seconds", "max_duration_seconds", "metadata",
        "quality",
    }  # fmt: skip
    assert {"type", "url", "room_name", "worker_token"} <= set(body["transport"])
    assert body["transport"]["worker_token"] in ctx.worker_tokens()


def test_an_avatar_is_picked_from_the_targets_list() -> None:
    assert Context(simulated().target).avatar() == "av_stock_mock"


def test_nothing_to_start_a_session_with_is_incomplete_naming_the_option() -> None:
    def no_avatars(app: Any, keys: dict[str, str]) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope.get("path") == "/v1/avatars":
                scope = dict(scope, query_string=b"limit=1&starting_after=av_stock_mock")
            await app(scope, receive, send)

        return wrapped

    only = frozenset({"session_lifecycle", "session_defaults"})
    report = run(simulated(wrap=no_avatars).target, RunOptions(max_examples=0, only=only))
    for name in only:
        result = report.result(name)
        assert result.outcome == "incomplete" and result.flag == "--avatar-id", name
    assert report.exit_code == 3


def test_a_target_refusing_every_run_body_is_incomplete_naming_the_options() -> None:
    inputs = Inputs(
        models=("sim/echo-text",), run_bodies=({"prompt": "the body of another reading"},)
    )
    report = run(simulated().target, RunOptions(max_examples=0, inputs=inputs))
    for name in ("run_lifecycle", "run_events", "run_deletion", "scope_runs_read"):
        result = report.result(name)
        assert result.outcome == "incomplete", name
        assert result.flag == "--model and --run-json", name
    assert report.exit_code == 3
    assert report.exit(allow_incomplete=True) == 0
    assert "--model and --run-json" in report.verdict()


def test_a_target_that_validates_the_room_is_incomplete_naming_transport_json() -> None:
    def room_checked(call: Call) -> None:
        body = call.json()
        if call.method == "POST" and call.path == "/v1/sessions" and isinstance(body, dict):
            transport = body.get("transport") or {}
            if transport.get("type") == "livekit" and transport.get("url", "").endswith(".invalid"):
                call.refuse(422, "unprocessable", "room_unreachable", "No such room.",
                            "transport.url")  # fmt: skip

    sim = simulated(edits=Edits(request=(room_checked,)))
    only = frozenset({"session_lifecycle", "session_defaults", "idempotent_creates"})
    report = run(sim.target, RunOptions(max_examples=0, only=only))
    assert report.failed_names() == [], report.summary()
    for name in only:
        assert report.result(name).flag == "--transport-json", name
    given = simulated(edits=Edits(request=(room_checked,)))
    fixed = run(given.target, RunOptions(max_examples=0, only=only,
                                         inputs=Inputs(transport=REAL_ROOM)))  # fmt: skip
    assert set(fixed.names("passed")) == only, fixed.summary()


@pytest.mark.req("EP-SESS-1", "RES-SESS-7", "HAR-6")
def test_a_plan_that_refuses_a_tier_fails_and_stops_the_script() -> None:
    """The seed lists the four tiers as request values of every create, and only the
    max-duration clamp is plan-specific: a plan refusing ``mock`` fails ``session_create``
    (the previous wave read it as legal and tried the next tier), and the script that needed
    the session stops without a second, misleading failure."""

    def no_mock(call: Call) -> None:
        body = call.json()
        if call.method == "POST" and isinstance(body, dict) and body.get("quality") == "mock":
            call.refuse(403, "permission", "quality.not_in_plan", "Not on this plan.", "quality")

    sim = simulated(edits=Edits(request=(no_mock,)))
    seen = _sent(sim)
    only = frozenset({"session_lifecycle", "session_create"})
    report = run(sim.target, RunOptions(max_examples=0, only=only))
    assert report.failed_names() == ["session_create"], report.summary()
    assert report.result("session_lifecycle").outcome == "not_applicable"
    qualities = [json.loads(e.request_body).get("quality") for e in seen
                 if e.path == "/v1/sessions" and e.method == "POST"]  # fmt: skip
    assert qualities == ["mock"]


# -- time ----------------------------------------------------------------------------------------


def test_real_waits_are_scaled_shown_and_bounded() -> None:
    said: list[str] = []
    slept: list[float] = []
    clock = RealClock(factor=0.5, sleep=slept.append, display=line_display(said.append))
    ctx = Context(simulated(roles=()).target, Inputs(max_wait_seconds=30), clock=clock)
    ctx.wait(12, "the idle timeout")
    assert slept == [6] and said == ["waiting 6 s: the idle timeout"]
    with pytest.raises(Incomplete, match="exceeds --max-wait 30") as raised:
        ctx.wait(61, "a day")
    assert raised.value.flag == "--max-wait 32"


def test_a_quick_run_takes_no_wait() -> None:
    ctx = Context(simulated(roles=()).target, clock=QuickClock())
    ctx.wait(0, "nothing")
    with pytest.raises(Incomplete, match="needs a wait of 1") as raised:
        ctx.wait(1, "a timer")
    assert raised.value.flag == "without --quick"


def test_a_wait_past_the_checks_budget_is_not_taken_but_pacing_extends_it() -> None:
    now = [100.0]
    clock = RealClock(sleep=lambda s: now.__setitem__(0, now[0] + s), monotonic=lambda: now[0])
    ctx = Context(simulated(roles=()).target, clock=clock, wall=lambda: now[0])
    ctx.deadline = 110.0
    ctx.wait(5, "a short one")
    with pytest.raises(Incomplete, match="budget ran out"):
        ctx.wait(6, "one too long")
    ctx.wait(30, "the rate limit", pacing=True)
    assert ctx.deadline == 140.0 and now[0] == 135.0


def test_with_the_admin_token_waiting_moves_the_simulated_clock() -> None:
    sim = simulated()
    before = sim.platform.clock.now
    Context(sim.target).wait(90, "a minute and a half")
    assert sim.platform.clock.now == before + 90


# -- retry hints and pacing ----------------------------------------------------------------------


def _exchange(headers: dict[str, str]) -> Exchange:
    return Exchange("POST", "http://t/v1/sessions", "/v1/sessions", {}, b"", 429,
                    httpx.Headers(headers), b"{}")  # fmt: skip


NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.req("LIM-4")
@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "7"}, 7),
        ({"Retry-After": "0"}, 0),
        ({"Retry-After": "Thu, 01 Jan 2026 00:01:30 GMT", "Date": format_datetime(NOW, True)},
         90),
        ({"X-RateLimit-Reset": "12"}, 12),
        ({"X-RateLimit-Reset": str(int(NOW.timestamp()) + 40)}, 40),
        ({"X-RateLimit-Reset": "Thu, 01 Jan 2026 00:00:25 GMT"}, 25),
        ({"Retry-After": "3", "X-RateLimit-Reset": "50"}, 3),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)  # fmt: skip
def test_retry_hints_in_every_standard_form(headers: dict[str, str], seconds: float) -> None:
    assert retry_hint(_exchange(headers), wall_now=NOW.timestamp()) == seconds


@pytest.mark.req("LIM-3")
def test_a_pacer_keeps_a_key_within_the_limit_in_every_window() -> None:
    pacer = KeyPacer(limit=10, window=60, slack=5)
    pacer.start(0)
    for second in range(10):
        assert pacer.ready_at(second) == second
        pacer.record(second)
    assert pacer.ready_at(10) == 65  # the first create leaves the window (plus slack)
    assert pacer.ready_at(10, 3) == 67
    assert pacer.quiet_at(10) == 9 + 125  # fresh for every limiter after two windows


@pytest.mark.req("LIM-3")
def test_a_refusal_breaks_the_limit_only_once_the_key_was_watched_two_windows() -> None:
    pacer = KeyPacer(limit=10, window=60, slack=5)
    pacer.start(0)
    pacer.record(1)
    assert not pacer.refusal_breaks_the_limit(1)  # traffic from before the run is unknown
    pacer.record(130)
    assert pacer.refusal_breaks_the_limit(130)  # watched 130 s, one create since 5 s
    for second in range(131, 141):
        pacer.record(second)
    assert not pacer.refusal_breaks_the_limit(140)  # eleven in the window: a refusal is due
    pacer.record(200)  # six in the last window, but a sliding-window counter weighs the one before
    assert pacer.in_window(200) == 6
    assert not pacer.refusal_breaks_the_limit(200)


# -- runs ----------------------------------------------------------------------------------------


def test_a_run_input_is_built_from_each_catalog_request_schema() -> None:
    for model in CATALOG:
        for operation in model.operations:
            instance = minimal_instance(operation.request_schema())
            assert instance is not None, model.id
            operation.input_model.model_validate(instance)


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "object", "required": ["a"], "properties": {"a": {"enum": ["x", "y"]}}},
         {"a": "x"}),
        ({"type": "string", "minLength": 3}, "aaa"),
        ({"type": "integer", "minimum": 4}, 4),
        ({"type": "array", "minItems": 2, "items": {"const": 1}}, [1, 1]),
        ({"examples": [{"k": 1}], "type": "object"}, {"k": 1}),
        ({"$defs": {"n": {"type": "number", "default": 2.5}}, "$ref": "#/$defs/n"}, 2.5),
        ({"type": "string", "pattern": "^[0-9]+$"}, None),  # found no valid value: offered none
        ({"type": 12}, None),  # not a schema
    ],
)  # fmt: skip
def test_minimal_instances(schema: dict[str, Any], instance: Any) -> None:
    assert minimal_instance(schema) == instance


@pytest.mark.req("SIM-8", "SIM-9")
def test_the_worker_pool_can_be_read_and_put_back_through_the_admin_api() -> None:
    sim = simulated()
    read = sim.target.request("GET", "/_sim/faults/capacity", role="admin")
    assert read.status == 200 and read.json()["capacity"] == sim.platform.config.scheduler.workers
    shrunk = sim.target.request(
        "POST", "/_sim/faults/capacity", role="admin", json_body={"workers": 0}
    )
    assert shrunk.json()["capacity"] == 0
    again = sim.target.request("GET", "/_sim/faults/capacity", role="admin")
    assert again.json() == shrunk.json()
    assert sim.target.request("GET", "/_sim/faults/capacity", role=None).status == 401
