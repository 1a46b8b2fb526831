"""Fault injection on the realtime fleet (SIM-9): crashes, heartbeat loss, slow start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from sim.config import SchedulerConfig, SimConfig
from sim.distributions import Constant, Uniform
from sim.errors import Conflict

if TYPE_CHECKING:
    from conftest import Kit, World

FIRST_FRAME = 2.5


def fixed(**scheduler: Any) -> SimConfig:
    base: dict[str, Any] = {
        "worker_boot": Constant(value=2.0),
        "first_frame_latency": Constant(value=0.5),
    }
    base.update(scheduler)
    return SimConfig(scheduler=SchedulerConfig(**base))


def start(world: World, kit: Kit) -> tuple[Any, str]:
    caller = world.caller()
    session_id = world.service.create(caller, kit.body())["id"]
    return caller, session_id


@pytest.mark.req("SIM-9", "SIM-4", "RES-SESS-6")
def test_crash_mid_session_fails_and_bills_up_to_the_crash_once(kit: Kit) -> None:
    world = kit.world(fixed(workers=1, worker_restart_seconds=30))
    caller, session_id = start(world, kit)
    world.at(FIRST_FRAME)
    world.service.inject_audio(session_id, kind="silence", duration=600)
    world.at(FIRST_FRAME + 41.2)
    worker = world.service.faults.crash_worker(session_id=session_id)
    failed = world.service.retrieve(caller, session_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == "worker_lost"
    assert failed["usage"]["billable_seconds"] == 42  # up to the crash, rounded up
    assert [c.billable_seconds for c in world.billing.charges] == [42]
    usage_events = world.kernel.events.of_type("session.usage")
    assert len(usage_events) == 1 and usage_events[0].data["usage"]["billable_seconds"] == 42
    # Nothing later bills again: ending it, crashing again, time passing.
    world.service.end(caller, session_id)
    with pytest.raises(Conflict):
        world.service.faults.crash_worker(session_id=session_id)
    world.service.faults.crash_worker(worker_id=worker)  # already restarting: no effect
    world.advance(700)
    assert len(world.billing.charges) == 1
    assert world.service.retrieve(caller, session_id) == failed


@pytest.mark.req("SIM-9", "SIM-3")
def test_a_crashed_worker_returns_after_its_restart(kit: Kit) -> None:
    world = kit.world(fixed(workers=1, worker_restart_seconds=30))
    _caller, session_id = start(world, kit)
    world.at(FIRST_FRAME)
    world.service.faults.crash_worker(session_id=session_id)
    assert world.status()["status"] == "major_outage"
    second_caller, second = start(world, kit)  # waits for the only worker
    world.at(FIRST_FRAME + 15 - 0.01)
    assert world.service.retrieve(second_caller, second)["status"] == "queued"
    world.at(FIRST_FRAME + 15)
    assert world.service.retrieve(second_caller, second)["status"] == "failed"  # 30 s > 15 s
    world.at(FIRST_FRAME + 20)
    third_caller, third = start(world, kit)
    world.at(FIRST_FRAME + 30)  # the worker is back and takes the waiting job
    assert world.service.retrieve(third_caller, third)["status"] == "starting"
    assert world.status()["status"] == "operational"


@pytest.mark.req("SIM-9", "SES-ST-9")
def test_crash_during_boot_fails_without_charge(kit: Kit) -> None:
    world = kit.world(fixed())
    caller, session_id = start(world, kit)
    world.at(1.0)
    world.service.faults.crash_worker(session_id=session_id)
    failed = world.service.retrieve(caller, session_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == "worker_lost"
    assert failed["first_frame_at"] is None
    world.advance(60)
    assert world.service.retrieve(caller, session_id)["status"] == "failed"
    assert world.billing.charges == []


@pytest.mark.req("SIM-9", "SES-ST-9", "SIM-4")
def test_crash_while_draining_ends_as_asked(kit: Kit) -> None:
    world = kit.world(fixed())
    caller, session_id = start(world, kit)
    world.at(FIRST_FRAME + 10)
    world.service.inject_audio(session_id, kind="speech", duration=4)
    world.service.end(caller, session_id)
    world.at(FIRST_FRAME + 12)
    world.service.faults.crash_worker(session_id=session_id)
    ended = world.service.retrieve(caller, session_id)
    assert ended["status"] == "ended" and ended["error"] is None
    assert world.kernel.events.of_type("session.ended")[0].data["reason"] == "client_request"
    world.advance(30)  # the drain timer of the crashed worker does nothing
    assert [c.billable_seconds for c in world.billing.charges] == [12]


@pytest.mark.req("SIM-9", "SIM-4", "RES-SESS-5")
def test_heartbeat_loss_freezes_usage_then_recovers(kit: Kit) -> None:
    world = kit.world(fixed())
    caller, session_id = start(world, kit)
    world.at(FIRST_FRAME)
    world.service.inject_audio(session_id, kind="silence", duration=600)
    world.at(FIRST_FRAME + 25)
    assert world.service.faults.lose_heartbeats(session_id, 20) is None  # back before the limit
    assert world.status()["status"] == "degraded"
    world.at(FIRST_FRAME + 44)
    assert world.service.retrieve(caller, session_id)["usage"]["billable_seconds"] == 20
    world.at(FIRST_FRAME + 50)
    usage = world.service.retrieve(caller, session_id)["usage"]
    assert usage["billable_seconds"] == 50 and usage["frames"] == 50 * 25
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    assert world.status()["status"] == "operational"


@pytest.mark.req("SIM-9", "SIM-4")
def test_heartbeat_loss_beyond_the_limit_loses_the_worker(kit: Kit) -> None:
    world = kit.world(fixed())
    caller, session_id = start(world, kit)
    world.at(FIRST_FRAME)
    world.service.inject_audio(session_id, kind="silence", duration=600)
    world.at(FIRST_FRAME + 25)
    lost_at = world.service.faults.lose_heartbeats(session_id, 60)
    assert lost_at == pytest.approx(FIRST_FRAME + 20 + 30)  # last heartbeat + the limit
    world.at(FIRST_FRAME + 50 - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 50)
    failed = world.service.retrieve(caller, session_id)
    assert failed["status"] == "failed" and failed["error"]["code"] == "worker_lost"
    assert len(world.billing.charges) == 1
    assert world.service.pool_status().restarting == 1  # the lost worker is recycled
    with pytest.raises(Conflict):
        world.service.faults.lose_heartbeats(session_id, 10)


@pytest.mark.req("SIM-9")
def test_slow_startup_delays_first_frames_while_active(kit: Kit) -> None:
    world = kit.world(fixed(workers=4))
    world.service.faults.slow_startup(10.0, duration=5)
    assert world.status()["status"] == "degraded"
    slow_caller, slow = start(world, kit)
    world.at(FIRST_FRAME + 10 - 0.01)
    assert world.service.retrieve(slow_caller, slow)["status"] == "starting"
    world.at(FIRST_FRAME + 10)
    assert world.service.retrieve(slow_caller, slow)["status"] == "running"
    fast_caller, fast = start(world, kit)  # after the fault window
    world.at(world.now + FIRST_FRAME)
    assert world.service.retrieve(fast_caller, fast)["status"] == "running"
    world.service.faults.slow_startup(Uniform(low=1, high=2))
    caller, third = start(world, kit)
    world.at(world.now + FIRST_FRAME + 2)
    assert world.service.retrieve(caller, third)["status"] == "running"
    world.service.faults.clear_slow_startup()
    assert world.status()["status"] == "operational"
