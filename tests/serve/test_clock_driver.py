"""The served-mode clock driver: wall time scaled onto the virtual clock (SIM-1, SIM-8)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.serve.clock_driver import WallClockDriver
from sim.clock import Clock

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class FakeWall:
    """A wall clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _timer(clock: Clock, at: float, fired: list[float]) -> None:
    def proc(env: simpy.Environment) -> simpy.events.ProcessGenerator:
        yield env.timeout(at - env.now)
        fired.append(env.now)

    clock.env.process(proc(clock.env))


@pytest.mark.req("SIM-8", "SIM-1")
def test_sim_time_is_wall_elapsed_divided_by_the_factor() -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    driver = WallClockDriver(clock, factor=0.5, wall=wall)
    wall.now += 3.0
    assert driver.sync() == pytest.approx(6.0)
    assert clock.now == pytest.approx(6.0)
    slow = WallClockDriver(Clock(EPOCH), factor=4.0, wall=wall)
    wall.now += 8.0
    assert slow.sync() == pytest.approx(2.0)


@pytest.mark.req("SIM-8")
def test_sync_runs_every_event_due_in_order() -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    fired: list[float] = []
    for at in (5.0, 1.0, 3.0, 50.0):
        _timer(clock, at, fired)
    driver = WallClockDriver(clock, factor=0.1, wall=wall)
    wall.now += 0.5  # five simulated seconds
    driver.sync()
    assert fired == [1.0, 3.0, 5.0]
    assert driver.seconds_until_next_event() == pytest.approx(4.5)


@pytest.mark.req("SIM-8")
def test_an_admin_jump_moves_the_anchor_instead_of_stalling_the_clock() -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    driver = WallClockDriver(clock, factor=1.0, wall=wall)
    wall.now += 10.0
    driver.sync()
    clock.advance(3600.0)  # what POST /_sim/clock/advance does
    wall.now += 2.0
    assert driver.sync() == pytest.approx(10.0 + 3600.0 + 2.0)


@pytest.mark.req("SIM-8")
def test_a_failing_event_is_reported_and_the_clock_carries_on() -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    errors: list[Exception] = []
    fired: list[float] = []

    def broken(env: simpy.Environment) -> simpy.events.ProcessGenerator:
        yield env.timeout(1.0)
        raise RuntimeError("a bug in a timer")

    clock.env.process(broken(clock.env))
    _timer(clock, 2.0, fired)
    driver = WallClockDriver(clock, factor=1.0, wall=wall, on_error=errors.append)
    wall.now += 3.0
    driver.sync_safely()
    assert [str(e) for e in errors] == ["a bug in a timer"]
    driver.sync_safely()
    assert fired == [2.0]
    assert clock.now == pytest.approx(3.0)  # the failure did not shift the mapping


@pytest.mark.req("SIM-8")
def test_no_scheduled_event_means_no_wake_up_time() -> None:
    driver = WallClockDriver(Clock(EPOCH), factor=1.0, wall=FakeWall())
    assert driver.seconds_until_next_event() is None


@pytest.mark.req("SIM-8")
@pytest.mark.parametrize("factor", [0.0, -1.0, float("nan")])
def test_a_factor_that_is_not_positive_is_refused(factor: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        WallClockDriver(Clock(EPOCH), factor=factor)


@pytest.mark.req("SIM-8", "SIM-1")
@settings(max_examples=60, deadline=None)
@given(
    factor=st.floats(min_value=0.01, max_value=100.0),
    steps=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=50.0), st.floats(min_value=0.0, max_value=50.0)
        ),
        max_size=12,
    ),
)
def test_the_clock_never_goes_back_and_tracks_wall_plus_jumps(
    factor: float, steps: list[tuple[float, float]]
) -> None:
    clock, wall = Clock(EPOCH), FakeWall()
    driver = WallClockDriver(clock, factor=factor, wall=wall)
    start_wall = wall.now
    jumps = 0.0
    previous = clock.now
    for wall_step, jump in steps:
        wall.now += wall_step
        if jump:
            clock.advance(jump)
            jumps += jump
        now = driver.sync()
        assert now >= previous
        expected = (wall.now - start_wall) / factor + jumps
        assert now == pytest.approx(expected, rel=1e-9, abs=1e-6)
        previous = now


@pytest.mark.req("SIM-8")
def test_the_background_task_fires_timers_with_no_traffic() -> None:
    """A timer 100 simulated seconds out fires after ~0.1 s of wall time at factor 0.001."""
    clock = Clock(EPOCH)
    fired: list[float] = []
    _timer(clock, 100.0, fired)

    async def scenario() -> float:
        driver = WallClockDriver(clock, factor=0.001)
        task = asyncio.create_task(driver.run())
        started = time.monotonic()
        try:
            while not fired:
                if time.monotonic() - started > 5.0:
                    raise AssertionError("the timer did not fire within 5 s of wall time")
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return time.monotonic() - started

    elapsed = asyncio.run(scenario())
    assert fired == [100.0]
    assert 0.09 <= elapsed < 2.0


@pytest.mark.req("SIM-8")
def test_the_background_task_sleeps_instead_of_polling() -> None:
    """With the next event far away the driver wakes only when poked, not in a busy loop."""
    clock = Clock(EPOCH)
    fired: list[float] = []
    _timer(clock, 1_000_000.0, fired)
    syncs = 0

    class CountingDriver(WallClockDriver):
        def sync(self) -> float:
            nonlocal syncs
            syncs += 1
            return super().sync()

    async def scenario() -> None:
        driver = CountingDriver(clock, factor=1.0)
        task = asyncio.create_task(driver.run())
        await asyncio.sleep(0.2)
        assert syncs == 1
        _timer(clock, clock.now + 0.05, fired)  # a request scheduling something sooner
        driver.poke()
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert len(fired) == 1
    assert 2 <= syncs <= 4
