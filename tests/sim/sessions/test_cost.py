"""The cost rule: a session's scheduled events do not grow with its length (SIM-4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Kit


def events_for(kit: Kit, minutes: int, *, end_early: bool) -> int:
    world = kit.world()
    caller = world.accounts.create_organization("Pro", "pro").id
    key_caller = world.caller(caller)
    before = world.kernel.clock.scheduled_events
    session_id = world.service.create(
        key_caller,
        kit.body(max_duration_seconds=minutes * 60),  # idle timeout: default 30 s
    )["id"]
    world.advance(20)
    # A talk-spurt pattern that does not depend on the length: speech then continuous silence.
    world.service.inject_audio(session_id, kind="speech", duration=5)
    world.service.inject_audio(session_id, kind="silence", duration=minutes * 60)
    if end_early:
        world.advance(minutes * 60 - 30)
        world.service.end(key_caller, session_id)
    world.advance(minutes * 60 + 60)
    session = world.service.session(session_id)
    assert session.status == "ended"
    assert session.billable_seconds >= minutes * 60 - 40  # it really ran for its length
    return world.kernel.clock.scheduled_events - before


@pytest.mark.req("SIM-4")
@pytest.mark.parametrize("end_early", [False, True])
def test_a_long_session_schedules_no_more_events_than_a_short_one(
    kit: Kit, end_early: bool
) -> None:
    one_minute = events_for(kit, 1, end_early=end_early)
    sixty_minutes = events_for(kit, 60, end_early=end_early)
    assert sixty_minutes <= one_minute
    assert one_minute <= 8  # dispatch, first frame, a few deadline wakes, drain


@pytest.mark.req("SIM-4")
def test_counter_sees_every_event_on_the_environment(kit: Kit) -> None:
    world = kit.world()
    before = world.kernel.clock.scheduled_events
    world.kernel.clock.env.timeout(5)
    assert world.kernel.clock.scheduled_events == before + 1
