"""Run lifecycle: the declared table, events, progress, capacity, cancel, billing calls.

(RES-RUN-1, RES-RUN-4, RES-RUN-5, RES-RUN-7, EP-RUN-1, EP-RUN-2, EP-RUN-4)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import ModelConfig
from sim.distributions import LogNormal
from sim.errors import Conflict, QuotaExceeded, RateLimited, Unprocessable
from sim.runs import RUN_TERMINAL, RUN_TRANSITIONS, RunStatus
from sim.runs.lifecycle import next_run_status

if TYPE_CHECKING:
    from conftest import World

RUN_FIELDS = {
    "id",
    "model",
    "model_revision",
    "operation",
    "status",
    "progress",
    "created_at",
    "started_at",
    "completed_at",
    "external_id",
    "metadata",
    "credits",
    "error",
    "outputs",
}


def _events(world: World, run_id: str) -> list[dict[str, Any]]:
    return list(world.runs.events(world.alice, run_id, starting_after=None, limit=500)["data"])


@pytest.mark.req("RES-RUN-7")
def test_terminal_states_have_no_outgoing_transition_and_undeclared_moves_are_bugs() -> None:
    sources = {t.source for t in RUN_TRANSITIONS}
    assert not sources & set(RUN_TERMINAL)
    assert {t.target for t in RUN_TRANSITIONS} == set(RunStatus)
    for status in RUN_TERMINAL:
        for trigger in {t.trigger for t in RUN_TRANSITIONS}:
            with pytest.raises(Exception, match="no transition"):
                next_run_status(status, trigger)


@pytest.mark.req("RES-RUN-1", "RES-RUN-5", "RES-RUN-7", "EP-RUN-1", "CONV-1", "CONV-2")
def test_a_run_goes_queued_running_succeeded_with_every_field(world: World) -> None:
    created = world.runs.create(
        world.alice,
        "sim/speech",
        {"input": {"text": "hi there"}, "external_id": "ext-1", "metadata": {"k": "v"}},
    )
    assert created.keys() >= RUN_FIELDS
    assert created["object"] == "run"
    assert created["id"].startswith("run_")
    assert created["status"] == "queued"
    assert created["started_at"] is None and created["completed_at"] is None
    assert created["error"] is None and created["outputs"] == []
    assert created["external_id"] == "ext-1" and created["metadata"] == {"k": "v"}
    assert created["credits"]["pricing_version"] == "2026-01"
    world.advance(0)
    status = world.runs.status(world.alice, created["id"])
    assert status["object"] == "run.status" and status["status"] == "running"
    assert {"id", "status", "progress", "error"} <= status.keys()
    world.advance(10)
    done = world.runs.retrieve(world.alice, created["id"])
    assert done["status"] == "succeeded"
    assert done["progress"] == 1.0
    assert done["started_at"] == "2026-01-01T00:00:00.000Z"
    assert done["completed_at"] == "2026-01-01T00:00:10.000Z"
    assert "eta" not in done and "capacity_wait" not in done and "deleted_at" not in done
    types = [e["type"] for e in _events(world, created["id"])]
    assert types[:2] == ["run.queued", "run.started"]
    assert types[-1] == "run.succeeded"
    assert types.count("run.progress") == world.kernel.config.runs.progress_updates


@pytest.mark.req("RES-RUN-4", "EP-RUN-2")
@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    updates=st.integers(0, 6),
    actions=st.lists(
        st.tuples(st.sampled_from(["create", "cancel", "advance"]), st.floats(0.1, 30.0)),
        max_size=12,
    ),
)
def test_sequences_are_gap_free_from_one_and_progress_never_goes_back(
    make_world: Callable[..., World],
    seed: int,
    updates: int,
    actions: list[tuple[str, float]],
) -> None:
    world = make_world(
        seed=seed, progress_updates=updates, run_workers=2, capacity_wait_seconds=20.0
    )
    run_ids: list[str] = [world.speech()["id"]]
    last_progress: dict[str, float] = {}

    def observe() -> None:
        for run_id in run_ids:
            progress = world.runs.status(world.alice, run_id)["progress"]
            assert 0.0 <= progress <= 1.0
            assert progress >= last_progress.get(run_id, 0.0)
            last_progress[run_id] = progress

    for action, amount in actions:
        if action == "create":
            run_ids.append(world.speech()["id"])
        elif action == "cancel":
            target = run_ids[int(amount) % len(run_ids)]
            if world.runs.retrieve(world.alice, target)["status"] in ("queued", "running"):
                world.runs.cancel(world.alice, target)
        else:
            world.advance(amount)
        observe()
    world.advance(200)
    observe()
    for run_id in run_ids:
        events = _events(world, run_id)
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        times = [e["created_at"] for e in events]
        assert times == sorted(times)
        progress = [e["data"]["progress"] for e in events if e["type"] == "run.progress"]
        assert progress == sorted(progress) and all(0 < p < 1 for p in progress)
        assert events[-1]["type"] in ("run.succeeded", "run.failed", "run.canceled")


@pytest.mark.req("RES-RUN-4", "EP-RUN-2", "CONV-4", "CONV-5", "CONV-6")
def test_event_pages_walk_by_integer_sequence(world: World) -> None:
    run_id = world.speech()["id"]
    world.advance(60)
    everything = _events(world, run_id)
    seen: list[int] = []
    cursor: int | None = None
    while True:
        body = world.runs.events(world.alice, run_id, starting_after=cursor, limit=2)
        seen += [e["sequence"] for e in body["data"]]
        if not body["has_more"]:
            break
        assert isinstance(body["next_cursor"], int)
        cursor = body["next_cursor"]
    assert seen == [e["sequence"] for e in everything]
    tail = world.runs.events(world.alice, run_id, starting_after=len(everything), limit=10)
    assert tail["data"] == [] and tail["has_more"] is False and "next_cursor" not in tail
    for event in everything:
        assert {"id", "sequence", "type", "part_id", "data", "created_at"} == event.keys()
        assert event["id"].startswith("evt_")
    with pytest.raises(Unprocessable) as bad_limit:
        world.runs.events(world.alice, run_id, starting_after=None, limit=501)
    assert bad_limit.value.code == "validation.range"
    with pytest.raises(Unprocessable):
        world.runs.events(world.alice, run_id, starting_after=-1, limit=10)
    assert len(world.runs.events(world.alice, run_id, starting_after=0, limit=500)["data"]) == len(
        everything
    )


@pytest.mark.req("EP-RUN-1", "RES-RUN-7", "AUTH-4")
def test_cancel_queued_and_running_releases_the_reservation(world: World) -> None:
    queued = world.speech()["id"]
    canceled = world.runs.cancel(world.alice, queued)
    assert canceled["status"] == "canceled" and canceled["credits"]["reserved"] == 0
    assert canceled["completed_at"] is not None and canceled["error"] is None
    assert world.billing.for_run(queued)[-1] == ("release", None)
    running = world.speech()["id"]
    world.advance(3)
    assert world.runs.status(world.alice, running)["status"] == "running"
    world.runs.cancel(world.alice, running)
    world.advance(60)  # the run's pending timer fires: nothing may change
    body = world.runs.retrieve(world.alice, running)
    assert body["status"] == "canceled" and body["outputs"] == []
    assert [k for k, _ in world.billing.for_run(running)] == ["reserve", "release"]
    assert _events(world, running)[-1]["type"] == "run.canceled"


@pytest.mark.req("EP-RUN-1", "RES-RUN-7")
def test_cancel_on_a_terminal_run_is_a_conflict(world: World) -> None:
    run_id = world.speech()["id"]
    world.advance(60)
    with pytest.raises(Conflict) as error:
        world.runs.cancel(world.alice, run_id)
    assert error.value.code == "run.not_cancelable"
    assert [k for k, _ in world.billing.for_run(run_id)] == ["reserve", "settle"]


@pytest.mark.req("RES-RUN-1", "RES-RUN-5", "RES-RUN-7")
def test_capacity_wait_then_timeout_fails_and_releases(
    make_world: Callable[..., World], models: Callable[..., dict[str, ModelConfig]]
) -> None:
    world = make_world(run_workers=1, capacity_wait_seconds=30.0, models=models(100.0))
    first = world.speech()["id"]
    waiting = world.speech()
    assert waiting["status"] == "queued"
    assert waiting["capacity_wait"] == {
        "status": "waiting",
        "deadline_at": "2026-01-01T00:00:30.000Z",
        "message": waiting["capacity_wait"]["message"],
    }
    assert "eta" not in waiting
    status = world.runs.status(world.alice, waiting["id"])
    assert "capacity_wait" in status and "eta" not in status
    world.advance(29.9)
    assert world.runs.status(world.alice, waiting["id"])["status"] == "queued"
    world.advance(0.1)
    failed = world.runs.retrieve(world.alice, waiting["id"])
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "capacity_timeout"
    assert failed["completed_at"] == "2026-01-01T00:00:30.000Z"
    assert "capacity_wait" not in failed and failed["credits"]["reserved"] == 0
    assert [k for k, _ in world.billing.for_run(waiting["id"])] == ["reserve", "release"]
    types = [e["type"] for e in _events(world, waiting["id"])]
    assert types == ["run.queued", "run.capacity_wait", "run.failed"]
    assert world.runs.retrieve(world.alice, first)["status"] == "running"


@pytest.mark.req("RES-RUN-7", "RES-RUN-2")
def test_a_waiting_run_starts_in_fifo_order_when_a_slot_frees(
    make_world: Callable[..., World], models: Callable[..., dict[str, ModelConfig]]
) -> None:
    world = make_world(run_workers=1, capacity_wait_seconds=60.0, models=models(10.0))
    first, second, third = (world.speech()["id"] for _ in range(3))
    world.runs.cancel(world.alice, second)
    world.advance(10)
    assert world.runs.retrieve(world.alice, first)["status"] == "succeeded"
    started = world.runs.retrieve(world.alice, third)
    assert started["status"] == "running" and "capacity_wait" not in started
    assert started["started_at"] == "2026-01-01T00:00:10.000Z"
    assert "eta" in started
    world.advance(100)  # past the old deadline: the watcher must not expire a started run
    assert world.runs.retrieve(world.alice, third)["status"] == "succeeded"


@pytest.mark.req("EP-RUN-3", "LIM-9")
def test_queue_capacity_answers_rate_limit_with_a_retry_delay(
    make_world: Callable[..., World], models: Callable[..., dict[str, ModelConfig]]
) -> None:
    world = make_world(
        run_workers=0, capacity_wait_seconds=40.0, max_queued_runs_per_org=3, models=models(5.0)
    )
    for _ in range(3):
        world.speech()
        world.advance(5)
    with pytest.raises(RateLimited) as error:
        world.speech()
    assert error.value.code == "queue_full"
    assert error.value.retry_after == 25  # the first queued run leaves at t=40; now t=15
    world.speech(world.bob)  # another organization has its own bound
    assert len(world.billing.rows) == 4  # nothing reserved for the refused create
    world.advance(25)
    world.speech()  # the first run timed out: room again


@pytest.mark.req("EP-RUN-4")
def test_without_enough_credits_the_create_is_refused_and_nothing_exists(world: World) -> None:
    world.billing.balances[world.alice.org_id] = 3
    with pytest.raises(QuotaExceeded) as error:
        world.speech(text="x" * 100)  # 100 chars = 6.666 s at 2 credits/s = 14 credits
    assert error.value.code == "insufficient_credits"
    assert world.runs.list(world.alice, limit=10, starting_after=None)["data"] == []
    assert world.assets.list(world.alice, limit=10, starting_after=None)["data"] == []


@pytest.mark.req("EP-RUN-4", "RES-RUN-1")
def test_reservation_covers_the_estimate_and_settlement_never_exceeds_it(world: World) -> None:
    texts = ["a", "ab" * 7, "x" * 15, "y" * 16, "z" * 301]
    ids = [world.speech(text=t)["id"] for t in texts]
    for text, run_id in zip(texts, ids, strict=True):
        rows = world.billing.for_run(run_id)
        assert rows[0] == ("reserve", -(-(len(text) * 1000 // 15) * 2 // 1000))
    world.advance(100)
    for run_id in ids:
        (_, reserved), (kind, charged) = world.billing.for_run(run_id)
        assert kind == "settle" and charged is not None and reserved is not None
        assert 0 <= charged <= reserved
        credits = world.runs.retrieve(world.alice, run_id)["credits"]
        assert credits["charged"] == charged and credits["reserved"] == 0


@pytest.mark.req("RES-RUN-7", "RES-RUN-1")
def test_model_error_fails_the_run_and_releases(
    make_world: Callable[..., World], models: Callable[..., dict[str, ModelConfig]]
) -> None:
    world = make_world(models=models(4.0, failure_probability=1.0))
    run_id = world.speech()["id"]
    world.advance(10)
    body = world.runs.retrieve(world.alice, run_id)
    assert body["status"] == "failed" and body["error"]["code"] == "model_error"
    assert body["outputs"] == [] and body["progress"] < 1.0
    assert [k for k, _ in world.billing.for_run(run_id)] == ["reserve", "release"]


@pytest.mark.req("RES-RUN-7")
def test_internal_model_runs_are_marked_for_billing(world: World) -> None:
    run_id = world.runs.create(world.alice, "sim/internal-speech", {"input": {"text": "x"}})["id"]
    assert world.billing.charges[run_id].internal_model is True
    assert world.billing.charges[world.speech()["id"]].internal_model is False


@pytest.mark.req("SIM-2")
def test_same_seed_same_runs_byte_for_byte(make_world: Callable[..., World]) -> None:
    def scenario() -> list[Any]:
        world = make_world(
            seed=5,
            run_workers=1,
            models={
                "sim/speech": ModelConfig(duration=LogNormal(median=3.0, sigma=0.5)),
            },
        )
        ids = [world.speech(text="t" * n)["id"] for n in (5, 50, 500)]
        world.advance(120)
        return [(world.runs.retrieve(world.alice, i), _events(world, i)) for i in ids]

    assert scenario() == scenario()


def _steps_to_drain(world: World) -> int:
    clock, steps = world.kernel.clock, 0
    while clock.next_event_at() is not None:
        clock.step()
        steps += 1
    return steps


@pytest.mark.req("RES-RUN-4", "RES-RUN-7")
@pytest.mark.parametrize("kind", ["run", "capacity_timeout"])
def test_simulated_cost_does_not_grow_with_simulated_duration(
    make_world: Callable[..., World], models: Callable[..., dict[str, ModelConfig]], kind: str
) -> None:
    def cost(seconds: float) -> tuple[int, int]:
        if kind == "run":
            world = make_world(models=models(seconds))
        else:
            world = make_world(run_workers=0, capacity_wait_seconds=seconds)
        run_id = world.speech()["id"]
        steps = _steps_to_drain(world)
        events = world.runs.events(world.alice, run_id, starting_after=None, limit=500)
        return steps, len(events["data"])

    assert cost(10.0) == cost(100_000.0)
