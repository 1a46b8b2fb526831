"""A caller that reads no body (``Platform.call(..., reads_body=False)``) changes nothing else.

The scenario's clients read only the id of what a create or an end answers, so the platform skips
rendering the rest for them; a keyed create's replay still gives the full original body.
These tests hold the cheaper form to the full one: the same operation in every state, the same
platform afterwards (sessions, events, ledger, counts, the API log), the same refusals, and an
answer that is the full body's id.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim.errors import Conflict, DomainError
from sim.operations import OPERATIONS, REPLAYED, UNREAD
from sim.platform import Platform
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
            "endSession", world.owner, {"session_id": session_id}, reads_body=reads_body
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
                "endSession", world.owner, {"session_id": "ses_missing"}, reads_body=reads_body
            )
        refusals.append((refused.value.code, refused.value.type, _records(world.platform)))
    assert refusals[0] == refusals[1]


def _create_twice(
    reads_body: bool, key: str | None, wait: float, surface: str | None = None
) -> tuple[World, list[dict[str, Any]]]:
    """Create a session (with ``key``, or through a dashboard ``surface``), wait ``wait``
    seconds, then send the same create again: its two answers (a refusal as its code)."""
    world = World()
    answers: list[dict[str, Any]] = []
    for _ in range(2):
        try:
            if surface is not None:
                answer = world.platform.sessions.create(
                    world.owner, session_body(), billing_surface=surface, render=reads_body
                )
            else:
                params: dict[str, Any] = {"body": session_body()}
                if key is not None:
                    params["idempotency_key"] = key
                answer = world.platform.call(
                    "createSession", world.owner, params, reads_body=reads_body
                ).body
        except DomainError as refused:  # the key's one live session (the cap)
            answer = {"refused": refused.code}
        answers.append(dict(answer))
        world.platform.advance(wait)
    return world, answers


@pytest.mark.req("SIM-7", "SES-ST-1", "LIM-5")
@pytest.mark.parametrize(
    ("key", "surface"), [(None, None), ("retry-1", None), (None, "playground")]
)
@pytest.mark.parametrize("wait", [0.0, 30.0, 4000.0])
def test_an_unread_create_is_the_same_create_answering_its_id(
    key: str | None, surface: str | None, wait: float
) -> None:
    """The same sessions, events, ledger, counts, API log and idempotency entries (compared as
    a replay gives them), whatever the session did since; only the answer is shorter."""
    read, bodies = _create_twice(True, key, wait, surface)
    unread, ids = _create_twice(False, key, wait, surface)
    assert bodies[0]["status"] == "queued"
    assert ids[0] == {"id": bodies[0]["id"]}
    if key is not None:  # the second create is a replay: the full original answer
        assert bodies[1] == bodies[0] and ids[1] == bodies[0]
    elif "id" in bodies[1]:  # a second session (the first one is over)
        assert ids[1] == {"id": bodies[1]["id"]}
    else:  # refused alike
        assert ids[1] == bodies[1]
    assert _records(unread.platform) == _records(read.platform)


@pytest.mark.req("LIM-5", "SES-ST-1")
@pytest.mark.parametrize("wait", [0.0, 5.0, 30.0, 4000.0])
def test_a_replay_of_an_unread_keyed_create_gives_the_original_full_answer(wait: float) -> None:
    """Rendered when the key comes back, the replay is the create's answer as it was (queued,
    no usage), however far the session has gone since, and then stays the same."""
    read, unread = World(), World()
    params = {"body": session_body(metadata={"team": "a", "n": 1}), "idempotency_key": "k-1"}
    original = read.platform.call("createSession", read.owner, params).body
    answered = unread.platform.call("createSession", unread.owner, params, reads_body=False)
    assert answered.body == {"id": original["id"]} and not answered.replayed
    for world in (read, unread):
        world.platform.advance(wait)
    for _ in range(2):
        replay = unread.platform.call("createSession", unread.owner, params)
        assert replay.replayed and replay.body == original
    assert unread.platform.sessions.created(original["id"]) == original
    assert unread.call("retrieveSession", session_id=original["id"]) == read.call(
        "retrieveSession", session_id=original["id"]
    )


@pytest.mark.req("LIM-5")
def test_an_unread_keyed_create_that_fails_half_way_leaves_no_entry() -> None:
    """The stored renderer is part of the create's unit, like a stored body."""
    world = World()
    params = {"body": session_body(), "idempotency_key": "k-2"}

    def refuse(_read: Any) -> None:
        raise Conflict("test.refused", "refused by the caller's check")

    with pytest.raises(DomainError):
        world.platform.call("createSession", world.owner, params, check=refuse, reads_body=False)
    assert world.platform.idempotency.replays() == []
    assert world.platform.call("createSession", world.owner, params).replayed is False


@pytest.mark.req("LIM-5")
def test_every_unread_form_is_known_and_an_idempotent_one_can_render_its_replay() -> None:
    """A replay must give the full original body: an idempotent operation's unread form has a
    renderer for it (``REPLAYED``)."""
    platform = Platform.create()
    assert UNREAD
    for operation_id, method in UNREAD.items():
        assert operation_id in OPERATIONS
        assert callable(getattr(platform.operations, method))
        if OPERATIONS[operation_id].idempotent:
            assert callable(getattr(platform.operations, REPLAYED[operation_id]))
    assert set(REPLAYED) <= set(UNREAD)


def test_an_operation_without_an_unread_form_answers_its_full_body() -> None:
    read, unread = World(), World()
    bodies = [
        world.platform.call(
            "createPipecatSession",
            world.owner,
            {"body": {"avatar_id": "av_stock_aria"}},
            reads_body=reads_body,
        ).body
        for world, reads_body in ((read, True), (unread, False))
    ]
    assert "createPipecatSession" not in UNREAD
    assert bodies[0] == bodies[1] and bodies[0]["session"]["status"] == "queued"
    assert _records(unread.platform) == _records(read.platform)
