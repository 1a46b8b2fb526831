"""The one door: rate limits, idempotency, public operations and the API log (LIM-3..6, SIM-2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sim.config import SimConfig
from sim.errors import AuthenticationFailed, Conflict, NotFound, PermissionDenied, RateLimited
from sim.operations import OPERATIONS
from sim.platform import Platform

from .conftest import World, session_body


@pytest.mark.req("EP-STATUS-1", "EP-BILL-1", "AUTH-2")
def test_public_operations_need_no_caller(world: World) -> None:
    status = world.platform.call("getStatus", None, {}).body
    assert status["status"] == "operational"
    plans = world.platform.call("listPlans", None, {}).body
    assert {p["key"] for p in plans["data"]} >= {"free", "starter", "pro", "enterprise"}
    with pytest.raises(AuthenticationFailed):
        world.platform.call("listSessions", None, {})


@pytest.mark.req("LIM-3", "LIM-4", "EP-SESS-5")
def test_eleventh_session_create_in_a_minute_is_rate_limited() -> None:
    world = World()
    platform = world.platform
    # End each session at once so the per-key concurrency cap never interferes.
    for i in range(10):
        outcome = platform.call("createSession", world.owner, {"body": session_body()})
        assert outcome.rate is not None
        assert outcome.rate.remaining == 9 - i
        world.call("endSession", session_id=outcome.body["id"])
        platform.advance(1)
    with pytest.raises(RateLimited) as excinfo:
        platform.call("createSession", world.owner, {"body": session_body()})
    error = excinfo.value
    assert error.rate is not None
    assert (error.rate.limit, error.rate.remaining) == (10, 0)
    assert error.retry_after == 50
    platform.advance(50)
    platform.call("createSession", world.owner, {"body": session_body()})


@pytest.mark.req("LIM-5", "CONV-7")
def test_idempotent_session_create_replays_and_conflicts(world: World) -> None:
    body = session_body(metadata={"a": 1})
    first = world.platform.call(
        "createSession", world.owner, {"body": body, "idempotency_key": "k-1"}
    )
    world.platform.advance(5)
    again = world.platform.call(
        "createSession",
        world.owner,
        {"body": json.loads(json.dumps(body)), "idempotency_key": "k-1"},
    )
    assert again.replayed
    assert again.body == first.body  # the original response, not the current state
    sessions = world.call("listSessions")["data"]
    assert len(sessions) == 1  # no second session
    with pytest.raises(Conflict) as excinfo:
        world.platform.call(
            "createSession",
            world.owner,
            {"body": session_body(metadata={"a": 2}), "idempotency_key": "k-1"},
        )
    assert excinfo.value.code == "idempotency_key.reused"


@pytest.mark.req("LIM-5", "CONV-7", "EP-RUN-1")
def test_idempotent_run_create_charges_once(world: World) -> None:
    params: dict[str, Any] = {
        "model_id": "sim/speech",
        "body": {"input": {"text": "hello there"}},
        "idempotency_key": "run-1",
    }
    first = world.platform.call("createRun", world.owner, params)
    again = world.platform.call("createRun", world.owner, params)
    assert again.replayed
    assert again.body["id"] == first.body["id"]
    assert len(world.call("listRuns")["data"]) == 1
    reservations = [
        e for e in world.platform.billing.entries(world.org_body["id"]) if e.kind == "reservation"
    ]
    assert len(reservations) == 1


@pytest.mark.req("AUTH-5", "AUTH-4")
def test_scoped_keys_reach_only_the_run_surface(world: World) -> None:
    reader = world.caller_for("runs_read")
    assert world.call("listRuns", reader)["object"] == "list"
    assert world.call("listModels", reader)["object"] == "list"
    for operation, params in [
        ("listSessions", {}),
        ("getQuota", {}),
        ("getUsage", {}),
        ("createRun", {"model_id": "sim/speech", "body": {"input": {"text": "x"}}}),
    ]:
        with pytest.raises(PermissionDenied) as excinfo:
            world.platform.call(operation, reader, params)
        assert excinfo.value.code == "api_key.scope_required"


@pytest.mark.req("AUTH-7")
def test_other_organizations_objects_do_not_exist(world: World) -> None:
    other = world.platform.admin.create_organization("Other", "enterprise")
    other_caller = world.platform.authenticate(f"Bearer {other['keys']['unrestricted']}")
    session = world.call("createSession", body=session_body())
    run = world.call("createRun", model_id="sim/speech", body={"input": {"text": "hi"}})
    for operation, params in [
        ("retrieveSession", {"session_id": session["id"]}),
        ("endSession", {"session_id": session["id"]}),
        ("retrieveRun", {"run_id": run["id"]}),
        ("deleteRun", {"run_id": run["id"]}),
    ]:
        with pytest.raises(NotFound):
            world.platform.call(operation, other_caller, params)
    assert world.call("listSessions", other_caller)["data"] == []
    assert world.call("listRuns", other_caller)["data"] == []


def _scripted_day(seed: int) -> str:
    """Drive a small mixed workload and dump every record the platform keeps."""
    world = World(SimConfig(seed=seed))
    p = world.platform
    for i in range(4):
        quality = ["lite", "standard", "pro", "mock"][i]
        s = world.call("createSession", body=session_body(quality=quality))
        p.advance(3)
        p.admin.inject_audio(s["id"], "speech", 20.0)
        p.advance(40)
        world.call("endSession", session_id=s["id"])
        p.advance(10)
    world.call("createRun", model_id="sim/speech", body={"input": {"text": "deterministic"}})
    p.advance(3600)
    records = {
        "sessions": [world.call("retrieveSession", session_id=s.id) for s in p.sessions.sessions()],
        "events": [e.to_payload() for e in p.kernel.events],
        "ledger": [e.as_record() for e in p.billing.entries()],
        "api_log": [vars_of(c) for c in p.api_log],
    }
    return json.dumps(records, sort_keys=True, default=str)


def vars_of(call: Any) -> dict[str, Any]:
    return {name: getattr(call, name) for name in call.__slots__}


@pytest.mark.req("SIM-2")
def test_same_seed_gives_byte_identical_records() -> None:
    assert _scripted_day(3) == _scripted_day(3)
    assert _scripted_day(3) != _scripted_day(4)


@pytest.mark.req("SIM-7")
def test_every_operation_has_a_method() -> None:
    platform = Platform.create()
    for operation in OPERATIONS.values():
        assert callable(getattr(platform.operations, operation.method))
