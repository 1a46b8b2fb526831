"""Run deletion: plan gate, tombstone, purge process, retained inputs, faults, queue bound.

(RUN-DEL-1, EP-RUN-3, RES-RUN-6, RES-RUN-7, SIM-9)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from sim.errors import Conflict, NotFound, PermissionDenied, RateLimited
from sim.runs import DELETION_TRANSITIONS, DeletionStatus
from sim.runs.lifecycle import DELETION_TERMINAL

if TYPE_CHECKING:
    from conftest import Media, World

DELETION_FIELDS = {
    "id",
    "object",
    "run_id",
    "status",
    "requested_at",
    "started_at",
    "completed_at",
    "error",
}


def _finished_run(world: World, caller: Any = None) -> str:
    run_id = world.speech(caller)["id"]
    world.advance(30)
    return run_id


def _deletion(world: World, deletion_id: str) -> dict[str, Any]:
    (record,) = [d for d in world.runs.deletions() if d.id == deletion_id]
    return record.to_resource(world.kernel.clock)


@pytest.mark.req("RES-RUN-7")
def test_deletion_table_ends_in_terminal_states() -> None:
    assert {t.target for t in DELETION_TRANSITIONS} == set(DeletionStatus)
    assert not {t.source for t in DELETION_TRANSITIONS} & DELETION_TERMINAL


@pytest.mark.req("RUN-DEL-1", "EP-RUN-3", "RES-RUN-6")
def test_deleting_tombstones_now_and_purges_later_keeping_billing_rows(world: World) -> None:
    run_id = _finished_run(world)
    before = world.runs.retrieve(world.alice, run_id)
    (output,) = before["outputs"]
    rows_before = list(world.billing.rows)
    world.advance(10)

    deletion = world.runs.delete(world.alice, run_id)
    assert deletion.keys() == DELETION_FIELDS
    assert deletion["object"] == "run.deletion" and deletion["id"].startswith("rdel_")
    assert (deletion["run_id"], deletion["status"]) == (run_id, "pending")
    assert deletion["requested_at"] == "2026-01-01T00:00:40.000Z"
    assert deletion["started_at"] is None and deletion["completed_at"] is None
    assert deletion["error"] is None

    tomb = world.runs.retrieve(world.alice, run_id)
    assert tomb["deleted_at"] == "2026-01-01T00:00:40.000Z"
    assert tomb["outputs"] == [] and tomb["metadata"] == {} and "audio" not in tomb
    assert tomb["status"] == "succeeded" and tomb["credits"] == before["credits"]
    listed = world.runs.list(world.alice, limit=10, starting_after=None)["data"]
    assert [r["id"] for r in listed] == [run_id] and listed[0]["outputs"] == []
    events = world.runs.events(world.alice, run_id, starting_after=None, limit=100)["data"]
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run.deleted"
    assert all(e["data"] == {} for e in events if e["type"] == "run.output")

    world.advance(0.0)
    assert _deletion(world, deletion["id"])["status"] == "purging"
    world.advance(world.kernel.config.runs.purge_time.mean)
    done = _deletion(world, deletion["id"])
    assert done["status"] == "completed" and done["error"] is None
    assert done["started_at"] == "2026-01-01T00:00:40.000Z"
    assert done["completed_at"] == "2026-01-01T00:00:45.000Z"
    asset = world.assets.list(world.alice, limit=10, starting_after=None)["data"][0]
    assert (asset["id"], asset["status"]) == (output["asset_id"], "deleted")
    assert asset["deleted_at"] == "2026-01-01T00:00:45.000Z"
    with pytest.raises(NotFound) as gone:
        world.assets.content(world.alice, output["asset_id"])
    assert gone.value.code == "asset.deleted"
    assert world.billing.rows == rows_before  # nothing removed, nothing added


@pytest.mark.req("EP-RUN-3", "RUN-DEL-1")
def test_only_enterprise_plans_may_delete(world: World) -> None:
    run_id = _finished_run(world, world.carol)
    with pytest.raises(PermissionDenied) as error:
        world.runs.delete(world.carol, run_id)
    assert error.value.code == "plan.feature_unavailable"
    assert "deleted_at" not in world.runs.retrieve(world.carol, run_id)
    world.accounts.set_plan(world.carol.org_id, "enterprise")
    assert world.runs.delete(world.carol, run_id)["status"] == "pending"


@pytest.mark.req("EP-RUN-3")
def test_a_non_terminal_or_already_deleted_run_conflicts(world: World) -> None:
    queued = world.speech()["id"]
    with pytest.raises(Conflict) as active:
        world.runs.delete(world.alice, queued)
    assert active.value.code == "run.not_deletable"
    world.advance(30)
    world.runs.delete(world.alice, queued)
    with pytest.raises(Conflict) as twice:
        world.runs.delete(world.alice, queued)
    assert twice.value.code == "run.already_deleted"
    world.advance(60)
    with pytest.raises(Conflict):
        world.runs.delete(world.alice, queued)
    assert len(world.runs.deletions()) == 1


@pytest.mark.req("RES-RUN-6", "RUN-DEL-1")
def test_library_inputs_are_retained_and_the_deletion_says_how_many(
    world: World, media: Media
) -> None:
    image = world.assets.create_library_asset(world.alice.org_id, media.png(), "image/png", "image")
    run_id = world.runs.create(
        world.alice,
        "sim/portrait-video",
        {
            "input": {
                "image": image.id,
                "audio": media.b64(media.wav()),
            }
        },
    )["id"]
    world.advance(30)
    deletion = world.runs.delete(world.alice, run_id)
    world.advance(30)
    done = _deletion(world, deletion["id"])
    assert done["status"] == "completed"
    assert done["error"] is not None and "1 input asset" in done["error"]
    statuses = {
        a["scope"]: a["status"]
        for a in world.assets.list(world.alice, limit=10, starting_after=None)["data"]
    }
    assert statuses == {"library": "ready", "run_input": "deleted", "run_output": "deleted"}
    assert world.assets.content(world.alice, image.id)[1] == "image/png"


@pytest.mark.req("RES-RUN-6", "SIM-9")
def test_an_injected_storage_failure_fails_the_purge_and_a_new_request_retries(
    world: World,
) -> None:
    run_id = _finished_run(world)
    (output,) = world.runs.retrieve(world.alice, run_id)["outputs"]
    world.runs.fail_next_purge(world.alice.org_id)
    first = world.runs.delete(world.alice, run_id)
    world.advance(30)
    failed = _deletion(world, first["id"])
    assert (failed["status"], failed["error"]) == ("failed", "storage purge failed")
    assert failed["completed_at"] is not None
    assert world.assets.content(world.alice, output["asset_id"])  # storage still holds it
    assert "deleted_at" in world.runs.retrieve(world.alice, run_id)  # the tombstone stays
    retry = world.runs.delete(world.alice, run_id)
    assert retry["id"] != first["id"]
    world.advance(30)
    assert _deletion(world, retry["id"])["status"] == "completed"
    with pytest.raises(NotFound):
        world.assets.content(world.alice, output["asset_id"])
    deleted_events = [
        e
        for e in world.runs.events(world.alice, run_id, starting_after=None, limit=100)["data"]
        if e["type"] == "run.deleted"
    ]
    assert len(deleted_events) == 1


@pytest.mark.req("SIM-9")
def test_purge_failure_switch_and_org_targeted_faults(world: World) -> None:
    mine, theirs = _finished_run(world), _finished_run(world, world.bob)
    world.runs.fail_next_purge(world.bob.org_id)
    a = world.runs.delete(world.alice, mine)
    b = world.runs.delete(world.bob, theirs)
    world.advance(30)
    assert _deletion(world, a["id"])["status"] == "completed"
    assert _deletion(world, b["id"])["status"] == "failed"
    world.runs.set_purge_failure(True)
    c = world.runs.delete(world.alice, _finished_run(world))
    world.advance(30)
    assert _deletion(world, c["id"])["status"] == "failed"


@pytest.mark.req("EP-RUN-3")
def test_purge_queue_capacity_answers_rate_limit(
    make_world: Callable[..., World], models: Callable[..., dict[str, Any]]
) -> None:
    world = make_world(max_pending_purges=2, models=models(1.0))
    runs = [world.speech()["id"] for _ in range(3)]
    world.advance(10)
    world.runs.delete(world.alice, runs[0])
    world.runs.delete(world.alice, runs[1])
    world.advance(2)  # the first purge has 3 of its 5 seconds left
    with pytest.raises(RateLimited) as error:
        world.runs.delete(world.alice, runs[2])
    assert (error.value.code, error.value.retry_after) == ("purge_queue_full", 3)
    assert "deleted_at" not in world.runs.retrieve(world.alice, runs[2])
    world.advance(3)
    assert world.runs.delete(world.alice, runs[2])["status"] == "pending"
