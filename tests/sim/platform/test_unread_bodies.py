"""A caller that reads no body (``Platform.call(..., reads_body=False)``) changes nothing else.

The scenario's clients discard what an end answers, so the platform skips rendering it for them.
These tests hold the cheaper form to the full one: the same operation in every state, the same
platform afterwards (sessions, events, ledger, counts, the API log), the same refusals, and an
answer that is the full body's id.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim.errors import DomainError
from sim.platform import _UNREAD, OPERATIONS, Platform
from tests.asgi.support import state_digest

from .conftest import World, session_body
from .test_platform import vars_of


def _records(platform: Platform) -> str:
    """Everything the end could change, the API log included (``state_digest`` leaves it out)."""
    api_log = [vars_of(call) for call in platform.api_log]
    return state_digest(platform) + repr(api_log)


def _end_twice(reads_body: bool, wait: float | None) -> tuple[World, list[dict[str, Any]]]:
    """Create a session, wait ``wait`` seconds (``None``: not even the dispatch at this instant),
    then end it twice (the second end repeats)."""
    world = World()
    session_id = world.call("createSession", body=session_body())["id"]
    if wait is not None:
        world.platform.advance(wait)
    answers = [world.call("retrieveSession", session_id=session_id)]
    for _ in range(2):
        outcome = world.platform.call(
            "endSession", world.caller, {"session_id": session_id}, reads_body=reads_body
        )
        answers.append(dict(outcome.body))
    return world, answers


@pytest.mark.req("SIM-7", "SES-ST-3", "SES-ST-4", "SES-ST-5")
@pytest.mark.parametrize(
    ("wait", "status", "ended"),
    [
        (None, "queued", "canceled"),
        (0.0, "starting", "canceled"),
        (30.0, "running", "ending"),
        (4000.0, "ended", "ended"),
    ],
)
def test_an_unread_end_is_the_same_end_answering_its_id(
    wait: float | None, status: str, ended: str
) -> None:
    read, bodies = _end_twice(True, wait)
    unread, ids = _end_twice(False, wait)
    assert [body["status"] for body in bodies] == [status, ended, ended]
    assert ids[1:] == [{"id": body["id"]} for body in bodies[1:]]
    assert _records(unread.platform) == _records(read.platform)
    for world in (read, unread):
        world.platform.advance(600)  # the drains end
    assert _records(unread.platform) == _records(read.platform)


@pytest.mark.req("SIM-7", "AUTH-7")
def test_an_unread_end_is_refused_like_a_read_one() -> None:
    refusals = []
    for reads_body in (True, False):
        world = World()
        with pytest.raises(DomainError) as refused:
            world.platform.call(
                "endSession", world.caller, {"session_id": "ses_missing"}, reads_body=reads_body
            )
        refusals.append((refused.value.code, refused.value.type, _records(world.platform)))
    assert refusals[0] == refusals[1]


def test_every_unread_form_is_of_a_known_operation_that_is_not_idempotent() -> None:
    """A replay must give the original body, so an idempotent operation always renders it."""
    platform = Platform.create()
    assert _UNREAD
    for operation_id, method in _UNREAD.items():
        assert not OPERATIONS[operation_id].idempotent
        assert callable(getattr(platform, method))


def test_an_operation_without_an_unread_form_answers_its_full_body() -> None:
    read, unread = World(), World()
    bodies = [
        world.platform.call(
            "createSession", world.caller, {"body": session_body()}, reads_body=reads_body
        ).body
        for world, reads_body in ((read, True), (unread, False))
    ]
    assert bodies[0] == bodies[1]
    assert _records(unread.platform) == _records(read.platform)
