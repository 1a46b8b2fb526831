"""Avatar uploads, fitting, retrieval and usability (AV-ST-1, RES-AV-*, EP-AV-1, EP-AV-3)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.avatars import (
    FAILURE_REASONS,
    FINAL_STATUSES,
    STOCK_AVATARS,
    TRANSITIONS,
    next_status,
)
from sim.distributions import Constant, Uniform
from sim.errors import Conflict, InternalError, NotFound, PermissionDenied, Unprocessable

if TYPE_CHECKING:  # the fixtures live in conftest; this import only names their type
    from conftest import World

ULID_ID = re.compile(r"^av_[0-9A-HJKMNP-TV-Z]{26}$")
REQUIRED = {"id", "object", "name", "status", "is_demo", "runtime_type", "created_at"}


def _create(world: World, name: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return world.avatars.create(
        world.alice,
        image=kwargs.pop("image", world.png),
        filename="me.png",
        content_type="image/png",
        name=name,
    )


@pytest.mark.req("AV-ST-1", "EP-AV-1", "RES-AV-1", "RES-AV-2")
def test_upload_answers_a_processing_avatar_in_the_contract_shape(world: World) -> None:
    world.advance(12.5)
    avatar = _create(world, name="Front desk")
    assert avatar.keys() >= REQUIRED
    assert ULID_ID.match(avatar["id"])
    assert avatar["object"] == "avatar"
    assert avatar["name"] == "Front desk"
    assert avatar["status"] == "processing"
    assert avatar["is_demo"] is False
    assert avatar["runtime_type"] == "realtime"
    assert avatar["created_at"] == "2026-01-01T00:00:12.500Z"
    assert avatar["from_photo_upload"] is True
    assert "failure_reason" not in avatar
    assert set(avatar) <= REQUIRED | {
        "voice",
        "instructions",
        "voice_instructions",
        "failure_reason",
        "from_photo_upload",
    }


@pytest.mark.req("EP-AV-1")
def test_default_names_count_the_organizations_uploads(world: World) -> None:
    assert _create(world)["name"] == "Avatar 1"
    assert _create(world, name="Named")["name"] == "Named"
    assert _create(world)["name"] == "Avatar 3"
    bobs = world.avatars.create(
        world.bob, image=world.png, filename=None, content_type=None, name=None
    )
    assert bobs["name"] == "Avatar 1"


@pytest.mark.req("EP-AV-1")
@pytest.mark.parametrize(
    ("name", "code"),
    [("", "validation.range"), ("x" * 101, "validation.range"), ("   ", "validation.format")],
)
def test_invalid_names_are_refused(world: World, name: str, code: str) -> None:
    with pytest.raises(Unprocessable) as caught:
        _create(world, name=name)
    assert (caught.value.code, caught.value.param) == (code, "name")
    assert world.avatars.avatars() == []


@pytest.mark.req("EP-AV-1")
def test_name_of_exactly_the_maximum_length_is_accepted(world: World) -> None:
    assert _create(world, name="y" * 100)["name"] == "y" * 100


@pytest.mark.req("EP-AV-1")
def test_missing_image_is_refused_as_required(world: World) -> None:
    with pytest.raises(Unprocessable) as caught:
        world.avatars.create(world.alice, image=None, filename=None, content_type=None, name="x")
    assert (caught.value.code, caught.value.param) == ("validation.required", "image")


@pytest.mark.req("EP-AV-1")
def test_declared_content_type_does_not_override_the_content(
    world: World, make_image: Callable[..., bytes]
) -> None:
    accepted = world.avatars.create(
        world.alice, image=make_image("JPEG"), filename="x.gif", content_type="image/gif", name=None
    )
    assert accepted["status"] == "processing"
    with pytest.raises(Unprocessable) as caught:
        world.avatars.create(
            world.alice,
            image=make_image("GIF"),
            filename="x.png",
            content_type="image/png",
            name=None,
        )
    assert caught.value.code == "avatar.image_invalid"


@pytest.mark.req("AV-ST-1", "EV-3")
def test_fitting_completes_to_ready_at_the_fitting_time_and_emits_avatar_ready(
    world: World,
) -> None:
    created = _create(world)
    world.advance(29.999)
    assert world.avatars.retrieve(world.alice, created["id"])["status"] == "processing"
    assert world.kernel.events.of_type("avatar.ready") == []
    world.advance(0.001)
    ready = world.avatars.retrieve(world.alice, created["id"])
    assert ready["status"] == "ready"
    assert "failure_reason" not in ready
    events = world.kernel.events.of_type("avatar.ready")
    assert len(events) == 1
    assert events[0].org_id == world.alice.org_id
    assert events[0].created_at == "2026-01-01T00:00:30.000Z"
    assert events[0].data["object"] == ready
    world.avatars.require_usable(world.alice.org_id, created["id"])


@pytest.mark.req("AV-ST-1", "RES-AV-2", "EV-3")
def test_fitting_failure_sets_a_reason_only_while_failed(make_world: Callable[..., World]) -> None:
    world = make_world(fitting_failure_probability=1.0)
    created = _create(world)
    assert "failure_reason" not in created
    world.advance(30)
    failed = world.avatars.retrieve(world.alice, created["id"])
    assert failed["status"] == "failed"
    assert failed["failure_reason"] in FAILURE_REASONS
    (event,) = world.kernel.events.of_type("avatar.failed")
    assert event.data["object"] == failed
    assert world.kernel.events.of_type("avatar.ready") == []
    # Final: nothing moves it again; the customer must upload anew.
    world.advance(10_000)
    assert world.avatars.retrieve(world.alice, created["id"]) == failed
    with pytest.raises(Conflict) as caught:
        world.avatars.require_usable(world.alice.org_id, created["id"])
    assert (caught.value.code, caught.value.param) == ("avatar.not_ready", "avatar_id")


@pytest.mark.req("AV-ST-1")
def test_every_observed_change_is_a_row_of_the_transition_table(
    make_world: Callable[..., World],
) -> None:
    world = make_world(
        seed=3, fitting_time=Uniform(low=5, high=60), fitting_failure_probability=0.4
    )
    ids = [_create(world)["id"] for _ in range(30)]
    seen = {avatar_id: ["processing"] for avatar_id in ids}
    for _ in range(70):
        world.advance(1)
        for avatar in world.avatars.avatars():
            if seen[avatar.id][-1] != avatar.status:
                seen[avatar.id].append(avatar.status)
    triggers = {(frm, to) for (frm, _), to in TRANSITIONS.items()}
    for history in seen.values():
        assert history[-1] in FINAL_STATUSES
        assert (None, history[0]) in triggers
        for frm, to in itertools.pairwise(history):
            assert (frm, to) in triggers
    statuses = {history[-1] for history in seen.values()}
    assert statuses == {"ready", "failed"}  # with p=0.4 over 30 uploads both outcomes occur
    for avatar in world.avatars.avatars():
        assert (avatar.failure_reason is not None) == (avatar.status == "failed")
        assert avatar.completed_at is not None
        assert 5 <= avatar.completed_at <= 60


@pytest.mark.req("AV-ST-1")
def test_the_table_refuses_moves_out_of_final_states() -> None:
    for status in FINAL_STATUSES:
        for trigger in ("upload", "fitting_succeeded", "fitting_failed"):
            with pytest.raises(InternalError):
                next_status(status, trigger)


@pytest.mark.req("AV-ST-1")
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32), uploads=st.integers(1, 8))
def test_same_seed_gives_identical_avatars_and_events(
    seed: int, uploads: int, make_world: Callable[..., World]
) -> None:
    def run() -> tuple[Any, ...]:
        world = make_world(
            seed=seed, fitting_time=Uniform(low=1, high=100), fitting_failure_probability=0.5
        )
        for _ in range(uploads):
            _create(world)
            world.advance(7)
        world.advance(200)
        return (world.avatars.avatars(), [e.to_payload() for e in world.kernel.events])

    assert run() == run()


@pytest.mark.req("RES-AV-1")
def test_stock_catalog_has_fixed_ready_demo_avatars_at_the_epoch(world: World) -> None:
    assert len(STOCK_AVATARS) == 5
    runtimes = [a.runtime_type for a in STOCK_AVATARS]
    assert runtimes.count("mock") == 1
    assert set(runtimes) == {"realtime", "mock"}
    for stock in STOCK_AVATARS:
        assert stock.id.startswith("av_stock_")
        assert not ULID_ID.match(stock.id)
        body = world.avatars.retrieve(world.bob, stock.id)
        assert body.keys() >= REQUIRED
        assert (body["status"], body["is_demo"], body["from_photo_upload"]) == (
            "ready",
            True,
            False,
        )
        assert body["created_at"] == "2026-01-01T00:00:00.000Z"
        assert "failure_reason" not in body
        world.avatars.require_usable(world.bob.org_id, stock.id)
    assert any("voice" in a.to_resource(world.kernel.clock) for a in STOCK_AVATARS)


@pytest.mark.req("EP-AV-3", "AUTH-7")
def test_another_organizations_avatar_is_not_found_exactly_like_an_unknown_id(
    world: World,
) -> None:
    own = _create(world)
    world.advance(30)
    assert world.avatars.retrieve(world.alice, own["id"])["status"] == "ready"
    refusals = []
    for avatar_id in (own["id"], "av_01JUNKNOWNUNKNOWNUNKNOWN00"):
        with pytest.raises(NotFound) as caught:
            world.avatars.retrieve(world.bob, avatar_id)
        refusals.append((caught.value.type, caught.value.code, caught.value.param))
    assert refusals[0] == refusals[1] == ("not_found", "avatar.not_found", None)


@pytest.mark.req("EP-SESS-1", "AUTH-7")
def test_require_usable_accepts_stock_and_own_ready_and_refuses_the_rest(world: World) -> None:
    processing = _create(world)
    with pytest.raises(Conflict) as caught:
        world.avatars.require_usable(world.alice.org_id, processing["id"])
    assert (caught.value.code, caught.value.param) == ("avatar.not_ready", "avatar_id")
    world.advance(30)
    world.avatars.require_usable(world.alice.org_id, processing["id"])
    world.avatars.require_usable(world.alice.org_id, "av_stock_mock")
    for org_id, avatar_id in (
        (world.bob.org_id, processing["id"]),
        (world.alice.org_id, "av_stock_nobody"),
    ):
        with pytest.raises(NotFound) as missing:
            world.avatars.require_usable(org_id, avatar_id)
        assert (missing.value.code, missing.value.param) == ("avatar.not_found", "avatar_id")


@pytest.mark.req("AUTH-7")
def test_scoped_keys_cannot_use_avatar_endpoints(world: World) -> None:
    key = world.accounts.create_key(world.alice.org_id, scopes=frozenset({"runs:read"}))
    scoped = world.accounts.authenticate(f"Bearer {key.secret}")
    calls = [
        lambda: world.avatars.retrieve(scoped, "av_stock_aria"),
        lambda: world.avatars.list(scoped, limit=20, starting_after=None),
        lambda: world.avatars.create(
            scoped, image=world.png, filename=None, content_type=None, name=None
        ),
    ]
    for call in calls:
        with pytest.raises(PermissionDenied) as caught:
            call()
        assert caught.value.code == "api_key.scope_required"


@pytest.mark.req("AV-ST-1")
def test_each_upload_schedules_a_bounded_number_of_events(make_world: Callable[..., World]) -> None:
    short = make_world(fitting_time=Constant(value=1.0))
    long = make_world(fitting_time=Constant(value=100_000.0))
    counts = []
    for world in (short, long):
        _create(world)
        steps = 0
        while world.kernel.clock.next_event_at() is not None:
            world.kernel.clock.step()
            steps += 1
        counts.append(steps)
    assert counts[0] == counts[1] <= 3
