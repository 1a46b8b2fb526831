"""What the harness sends and how it spends time: the user's inputs, discovery, waiting."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from harness.conformance.checks import Skipped
from harness.conformance.context import Context, Inputs, retry_after_seconds
from harness.conformance.instances import minimal_instance
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Exchange
from sim.runs.catalog import CATALOG
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
    inputs = Inputs(transport=REAL_ROOM, avatar_id="av_stock_aria", model="sim/speech")
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


def test_nothing_to_start_a_session_with_skips_naming_the_option() -> None:
    def no_avatars(app: Any, keys: dict[str, str]) -> Any:
        async def wrapped(scope: Any, receive: Any, send: Any) -> None:
            if scope.get("path") == "/v1/avatars":
                scope = dict(scope, query_string=b"limit=1&starting_after=av_stock_mock")
            await app(scope, receive, send)

        return wrapped

    report = run(simulated(wrap=no_avatars).target, RunOptions(max_examples=0))
    result = report.result("session_lifecycle")
    assert result.outcome == "skipped" and "--avatar-id" in (result.skip_reason or "")


def test_a_target_refusing_every_run_body_skips_naming_the_options() -> None:
    inputs = Inputs(model="sim/echo-text", run_body={"prompt": "the body of another reading"})
    report = run(simulated().target, RunOptions(max_examples=0, inputs=inputs))
    for name in ("run_lifecycle", "run_events", "run_deletion", "scope_runs_read"):
        result = report.result(name)
        assert result.outcome == "skipped", name
        assert "--run-json" in (result.skip_reason or ""), name
    assert report.exit_code == 0


def test_waiting_in_real_time_is_announced_and_bounded() -> None:
    said: list[str] = []
    slept: list[float] = []
    inputs = Inputs(real_time=True, max_wait_seconds=30)
    ctx = Context(simulated(roles=()).target, inputs, say=said.append, sleep=slept.append)
    ctx.wait(12, "the idle timeout")
    assert slept == [12] and said == ["waiting 12 s in real time: the idle timeout"]
    with pytest.raises(Skipped, match="exceeds --max-wait 30"):
        ctx.wait(31, "a day")
    without = Context(simulated(roles=()).target)
    with pytest.raises(Skipped, match="needs --sim-admin-token or --real-time"):
        without.wait(1, "a timer")


def test_with_the_admin_token_waiting_moves_the_simulated_clock() -> None:
    sim = simulated()
    before = sim.platform.clock.now
    Context(sim.target).wait(90, "a minute and a half")
    assert sim.platform.clock.now == before + 90


def _exchange(headers: dict[str, str]) -> Exchange:
    return Exchange("POST", "http://t/v1/sessions", "/v1/sessions", {}, b"", 429,
                    httpx.Headers(headers), b"{}")  # fmt: skip


def test_retry_after_in_seconds_or_as_a_date_on_the_targets_clock() -> None:
    assert retry_after_seconds(_exchange({"Retry-After": "7"})) == 7
    assert retry_after_seconds(_exchange({"Retry-After": "0"})) == 1
    dated = {
        "Retry-After": "Thu, 01 Jan 2026 00:01:30 GMT",
        "Date": "Thu, 01 Jan 2026 00:01:00 GMT",
    }
    assert retry_after_seconds(_exchange(dated)) == 30
    assert retry_after_seconds(_exchange({"Retry-After": "soon"}), default=5) == 5


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
