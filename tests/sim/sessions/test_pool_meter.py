"""The pool's meter: worker-seconds busy and in the pool, and the peaks since the last reading
(NB-7: utilization is a time average; NB-9: a spike between two samples is not lost)."""

from __future__ import annotations

import pytest

from sim.clock import Clock
from sim.config import SchedulerConfig, SimConfig
from sim.sessions.scheduler import Scheduler, Worker


def _pool(workers: int) -> tuple[Clock, Scheduler[str], dict[str, Worker], list[str]]:
    clock = Clock(SimConfig().epoch)
    hosts: dict[str, Worker] = {}
    expired: list[str] = []
    scheduler: Scheduler[str] = Scheduler(
        clock,
        SchedulerConfig(workers=workers),
        15.0,
        place=lambda job, worker: hosts.__setitem__(job, worker),
        expire=expired.append,
    )
    return clock, scheduler, hosts, expired


@pytest.mark.req("NB-7", "NB-9")
def test_the_meter_integrates_worker_seconds_and_keeps_the_peaks_between_readings() -> None:
    clock, pool, hosts, expired = _pool(2)
    for job in ("a", "b", "c"):
        pool.enqueue(job, clock.now, job)
    clock.advance(10)  # a and b busy from 0; c waits
    first = pool.meter()
    assert (first.busy_seconds, first.worker_seconds) == (20.0, 20.0)
    assert (first.busy_peak, first.waiting_peak) == (2, 1)
    pool.release(hosts["a"].id, "a")  # c takes a's worker at once
    clock.advance(5)
    pool.release(hosts["b"].id, "b")  # one worker idle from 15
    clock.advance(5)
    second = pool.meter()
    assert second.busy_seconds - first.busy_seconds == 2 * 5 + 1 * 5
    assert second.worker_seconds - first.worker_seconds == 2 * 10
    assert (second.busy_peak, second.waiting_peak) == (2, 1)  # c still waited at 10
    # A spike that comes and goes between two readings: four jobs wait, then time out.
    for job in ("d", "e", "f", "g", "h"):
        pool.enqueue(job, clock.now, job)  # one takes the idle worker, four wait
    clock.advance(30)
    assert sorted(expired) == ["e", "f", "g", "h"]
    assert pool.status().queued == 0  # a snapshot now sees nothing
    third = pool.meter()
    assert third.waiting_peak == 4 and third.busy_peak == 2
    fourth = pool.meter()  # the reading restarted the peaks at the pool as it is
    assert (fourth.busy_peak, fourth.waiting_peak) == (2, 0)


@pytest.mark.req("NB-7")
def test_worker_seconds_follow_the_pool_as_it_grows_and_shrinks() -> None:
    clock, pool, hosts, _expired = _pool(3)
    pool.enqueue("a", clock.now, "a")
    clock.advance(10)
    pool.set_capacity(1)  # two idle workers leave; the busy one stays
    clock.advance(10)
    pool.set_capacity(0)  # the busy one retires when its session ends
    clock.advance(10)
    assert pool.status().workers == 1
    pool.release(hosts["a"].id, "a")  # now it leaves
    clock.advance(10)
    reading = pool.meter()
    assert reading.worker_seconds == 3 * 10 + 1 * 10 + 1 * 10 + 0
    assert reading.busy_seconds == 30.0
