"""The worker pool, FIFO queue, admission control and the start-up timeout (SIM-3)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import pytest

from sim.clock import Clock
from sim.config import SchedulerConfig, SimConfig
from sim.distributions import Constant
from sim.errors import ServiceUnavailable
from sim.sessions.scheduler import Scheduler, Worker

if TYPE_CHECKING:
    from conftest import Kit, World


def config(**scheduler: Any) -> SimConfig:
    base: dict[str, Any] = {
        "worker_boot": Constant(value=2.0),
        "first_frame_latency": Constant(value=0.5),
    }
    base.update(scheduler)
    return SimConfig(scheduler=SchedulerConfig(**base))


def create(world: World, kit: Kit) -> tuple[Any, str]:
    caller = world.caller()  # one organization per session: caps stay out of the way
    return caller, world.service.create(caller, kit.body())["id"]


@pytest.mark.req("SES-ST-2", "RES-SESS-6", "SIM-3")
def test_a_job_not_placed_in_time_fails_no_capacity(kit: Kit) -> None:
    world = kit.world(config(workers=0))
    caller, session_id = create(world, kit)
    world.at(15 - 0.001)
    assert world.service.retrieve(caller, session_id)["status"] == "queued"
    world.at(15)
    failed = world.service.retrieve(caller, session_id)
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "no_capacity" and failed["error"]["message"]
    assert failed["started_at"] is None
    event = world.kernel.events.of_type("session.failed")[0]
    assert event.data["code"] == "no_capacity"
    assert world.billing.charges == []


@pytest.mark.req("SIM-3")
def test_fifo_placement_when_a_worker_frees(kit: Kit) -> None:
    world = kit.world(config(workers=1))
    first_caller, first = create(world, kit)
    waiting = []
    for _ in range(3):
        world.advance(1)
        waiting.append(create(world, kit))
    world.advance(2)
    assert world.service.retrieve(first_caller, first)["status"] == "running"
    world.service.end(first_caller, first)
    world.advance(1.0)  # drain done: the worker takes the oldest waiting job
    statuses = [world.service.retrieve(c, s)["status"] for c, s in waiting]
    assert statuses == ["starting", "queued", "queued"]
    placed = world.kernel.events.of_type("session.starting")
    assert [e.data["object"]["id"] for e in placed] == [first, waiting[0][1]]


@pytest.mark.req("EP-SESS-6", "SIM-3")
def test_admission_refuses_with_a_derived_retry_after(kit: Kit) -> None:
    world = kit.world(config(workers=1, max_queue_length=2))
    create(world, kit)  # placed
    world.advance(3)
    create(world, kit)  # waits; deadline 3 + 15 = 18
    world.advance(4)
    create(world, kit)  # waits; the queue is now full
    world.advance(2)  # t = 9
    with pytest.raises(ServiceUnavailable) as info:
        create(world, kit)
    assert info.value.code == "at_capacity"
    assert info.value.retry_after == 18 - 9
    world.advance(5.5)  # t = 14.5: the same state, less to wait
    with pytest.raises(ServiceUnavailable) as info:
        create(world, kit)
    assert info.value.retry_after == 4  # ceil(18 - 14.5)
    # A refused create leaves no session behind.
    assert len(world.service.sessions()) == 3


@pytest.mark.req("EP-SESS-6", "SIM-3")
def test_reject_policy_has_no_queue(kit: Kit) -> None:
    world = kit.world(config(workers=1, admission_policy="reject", max_queue_length=10))
    caller, first = create(world, kit)
    with pytest.raises(ServiceUnavailable) as info:
        create(world, kit)  # the only worker is claimed by the first job
    assert info.value.retry_after is not None and info.value.retry_after >= 1
    world.advance(3)  # running: the worker is busy until its max duration at the latest
    with pytest.raises(ServiceUnavailable) as info:
        create(world, kit)
    assert info.value.retry_after == 605  # ceil(2.5 + 600 + 5 - 3): max duration + drain cap
    world.service.end(caller, first)
    world.advance(1)
    create(world, kit)


@pytest.mark.req("SIM-3", "SIM-6")
def test_latencies_come_from_the_configured_distributions(kit: Kit) -> None:
    world = kit.world(
        config(workers=2, worker_boot=Constant(value=7.0), first_frame_latency=Constant(value=1.25))
    )
    caller, session_id = create(world, kit)
    world.at(8.25)
    assert world.service.retrieve(caller, session_id)["first_frame_at"] == (
        "2026-01-01T00:00:08.250Z"
    )


@pytest.mark.req("SIM-9", "SES-ST-2")
def test_capacity_loss_retires_idle_workers_first(kit: Kit) -> None:
    world = kit.world(config(workers=3))
    busy_caller, busy = create(world, kit)
    world.advance(3)
    world.service.faults.set_capacity(0)
    pool = world.service.pool_status()
    assert (pool.capacity, pool.workers, pool.busy, pool.idle) == (0, 1, 1, 0)
    assert world.service.retrieve(busy_caller, busy)["status"] == "running"  # not killed
    caller, queued = create(world, kit)
    world.service.end(busy_caller, busy)
    world.advance(2)
    assert world.service.pool_status().workers == 0  # the busy one retired after its session
    world.advance(15)
    assert world.service.retrieve(caller, queued)["status"] == "failed"
    assert world.status()["status"] == "major_outage"


@pytest.mark.req("SIM-9", "SIM-3")
def test_capacity_gain_places_queued_jobs(kit: Kit) -> None:
    world = kit.world(config(workers=0))
    caller, session_id = create(world, kit)
    world.advance(5)
    world.service.faults.set_capacity(2)
    world.advance(0)
    assert world.service.retrieve(caller, session_id)["status"] == "starting"
    assert world.service.pool_status().workers == 2
    # Shrinking and growing again brings a retiring worker back instead of adding one.
    world.service.faults.set_capacity(0)
    world.service.faults.set_capacity(1)
    pool = world.service.pool_status()
    assert (pool.workers, pool.busy) == (1, 1)
    assert [w.retiring for w in world.service.workers()] == [False]


@pytest.mark.req("SIM-3", "PERF-4")
def test_the_idle_worker_created_first_takes_each_job_through_crashes_and_resizes() -> None:
    """The idle heap keeps creation orders only (stale entries skipped): n = 400 random steps
    (enqueue, finish a job, crash a worker, resize the pool, advance the clock) on a pool of 6,
    and every placement goes to the idle worker with the lowest creation order at that moment,
    the rule a scan of the pool would apply."""
    rng = random.Random(3)
    clock = Clock(SimConfig().epoch)
    placed: list[tuple[str, str]] = []
    scheduler: Scheduler[str] | None = None

    def place(job: str, worker: Worker) -> None:
        assert scheduler is not None
        idle = [w.order for w in scheduler.workers() if w.status == "idle"]
        assert all(order > worker.order for order in idle), (worker.id, idle)
        placed.append((job, worker.id))

    scheduler = Scheduler(
        clock,
        SchedulerConfig(workers=6, max_queue_length=1000),
        1000.0,
        place=place,
        expire=lambda _job: None,
    )
    for step in range(400):
        running = {w.session_id: w.id for w in scheduler.workers() if w.session_id is not None}
        action = rng.random()
        if action < 0.4:
            job = f"job-{step}"
            scheduler.enqueue(job, clock.now, job)
        elif action < 0.65 and running:
            job = rng.choice(sorted(running))
            scheduler.release(running[job], job)
        elif action < 0.75:
            scheduler.crash(rng.choice(scheduler.workers()).id, rng.choice([1.0, 5.0]))
        elif action < 0.82:
            scheduler.set_capacity(rng.randint(2, 8))
        clock.advance(rng.choice([0.5, 2.0]))
    assert len(placed) > 100  # the rule was really exercised


@pytest.mark.req("PLAN-10", "SIM-9")
def test_workers_asked_for_join_after_the_provisioning_lead_time(kit: Kit) -> None:
    """With a lead time of 60 s, a queued job waits for the workers asked for at once; a shrink
    before they join withdraws the newest ask first, and a shrink is never delayed."""
    world = kit.world(config(workers=0, provision_lead_seconds=60.0))
    caller, session_id = create(world, kit)
    world.service.faults.set_capacity(2)
    world.advance(59.9)
    pool = world.service.pool_status()
    assert (pool.capacity, pool.workers) == (2, 0)
    assert world.service.retrieve(caller, session_id)["status"] == "failed"  # waited 15 s
    world.advance(0.1)
    assert world.service.pool_status().workers == 2
    # Two asks 10 s apart; shrinking before either joins withdraws the newer one first.
    world.service.faults.set_capacity(5)
    world.advance(10)
    world.service.faults.set_capacity(7)
    world.service.faults.set_capacity(4)
    world.advance(50)
    assert world.service.pool_status().workers == 4  # the first ask (3) joined, less one
    world.advance(10)
    assert world.service.pool_status().workers == 4  # the second was withdrawn whole
    world.service.faults.set_capacity(1)
    assert world.service.pool_status().workers == 1  # idle workers leave at once
    caller, placed = create(world, kit)
    world.advance(0)
    assert world.service.retrieve(caller, placed)["status"] == "starting"
