"""Listing avatars: scope, search, order and cursor walks (EP-AV-2, CONV-4..6, AUTH-7)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.avatars import STOCK_AVATARS
from sim.errors import Unprocessable

if TYPE_CHECKING:  # the fixtures live in conftest; this import only names their type
    from conftest import World

STOCK_IDS = [a.id for a in STOCK_AVATARS]


def _upload(world: World, name: str | None = None, *, bob: bool = False) -> str:
    caller = world.bob if bob else world.alice
    body = world.avatars.create(
        caller, image=world.png, filename=None, content_type=None, name=name
    )
    return str(body["id"])


def _ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["data"]]


def _walk(world: World, **filters: Any) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        body = world.avatars.list(world.alice, limit=3, starting_after=cursor, **filters)
        seen += _ids(body)
        if not body["has_more"]:
            return seen
        cursor = body["next_cursor"]


@pytest.mark.req("EP-AV-2", "AUTH-7")
def test_default_scope_is_stock_in_catalog_order_then_own_oldest_first(world: World) -> None:
    own = [_upload(world) for _ in range(3)]
    world.advance(5)
    own.append(_upload(world))
    _upload(world, bob=True)
    body = world.avatars.list(world.alice, limit=100, starting_after=None)
    assert _ids(body) == STOCK_IDS + own
    assert body["object"] == "list"
    assert body["has_more"] is False
    assert body["next_cursor"] == own[-1]


@pytest.mark.req("EP-AV-2", "AUTH-7")
def test_scope_platform_and_org(world: World) -> None:
    own = [_upload(world), _upload(world)]
    _upload(world, bob=True)
    platform = world.avatars.list(world.alice, limit=100, starting_after=None, scope="platform")
    org = world.avatars.list(world.alice, limit=100, starting_after=None, scope="org")
    assert _ids(platform) == STOCK_IDS
    assert all(item["is_demo"] for item in platform["data"])
    assert _ids(org) == own
    assert not any(item["is_demo"] for item in org["data"])


@pytest.mark.req("EP-AV-2", "CONV-5")
def test_empty_org_scope_has_no_cursor(world: World) -> None:
    body = world.avatars.list(world.alice, limit=20, starting_after=None, scope="org")
    assert body == {"object": "list", "data": [], "has_more": False}


@pytest.mark.req("EP-AV-2")
def test_search_is_a_case_insensitive_substring_of_name_or_id(world: World) -> None:
    lobby = _upload(world, "Lobby Greeter")
    other = _upload(world, "Support")
    hidden = _upload(world, "Lobby of Bob", bob=True)

    def search(q: str) -> list[str]:
        return _ids(world.avatars.list(world.alice, limit=100, starting_after=None, q=q))

    assert search("lOBBY") == [lobby]
    assert search("ARIA") == ["av_stock_aria"]
    assert search(other[-8:].lower()) == [other]  # part of the id, other case
    assert search("AV_STOCK_") == STOCK_IDS
    assert hidden not in search("lobby")
    assert search("no such avatar") == []
    assert (
        _ids(
            world.avatars.list(
                world.alice, limit=100, starting_after=None, scope="platform", q="lobby"
            )
        )
        == []
    )


@pytest.mark.req("EP-AV-2", "LIM-7")
@pytest.mark.parametrize(
    ("kwargs", "code", "param"),
    [
        ({"limit": 0}, "validation.range", "limit"),
        ({"limit": 101}, "validation.range", "limit"),
        ({"scope": "everything"}, "validation.enum", "scope"),
        ({"q": ""}, "validation.range", "q"),
        ({"q": "x" * 101}, "validation.range", "q"),
        (
            {"starting_after": "av_01JUNKNOWNUNKNOWNUNKNOWN00"},
            "validation.cursor",
            "starting_after",
        ),
    ],
)
def test_invalid_list_parameters_are_refused(
    world: World, kwargs: dict[str, Any], code: str, param: str
) -> None:
    call: dict[str, Any] = {"limit": 20, "starting_after": None} | kwargs
    with pytest.raises(Unprocessable) as caught:
        world.avatars.list(world.alice, **call)
    assert (caught.value.code, caught.value.param) == (code, param)


@pytest.mark.req("EP-AV-2", "AUTH-7")
def test_another_organizations_id_is_no_cursor(world: World) -> None:
    bobs = _upload(world, bob=True)
    with pytest.raises(Unprocessable):
        world.avatars.list(world.alice, limit=20, starting_after=bobs)


@pytest.mark.req("EP-AV-2", "LIM-7")
def test_limits_at_the_bounds(world: World) -> None:
    for _ in range(100):
        _upload(world)
    assert len(world.avatars.list(world.alice, limit=1, starting_after=None)["data"]) == 1
    full = world.avatars.list(world.alice, limit=100, starting_after=None)
    assert len(full["data"]) == 100
    assert full["has_more"] is True


@pytest.mark.req("EP-AV-2", "CONV-4", "CONV-5", "CONV-6")
@settings(max_examples=30, deadline=None)
@given(
    initial=st.integers(min_value=0, max_value=12),
    limit=st.integers(min_value=1, max_value=6),
    created_per_page=st.lists(st.integers(min_value=0, max_value=3), max_size=12),
    scope=st.sampled_from(["all", "org", "platform"]),
    with_q=st.booleans(),
)
def test_walk_visits_every_item_once_while_avatars_are_created(
    initial: int,
    limit: int,
    created_per_page: list[int],
    scope: str,
    with_q: bool,
    make_world: Callable[..., World],
) -> None:
    world = make_world()
    names = iter(f"{'Team' if i % 2 else 'Solo'} {i}" for i in range(1000))
    for _ in range(initial):
        _upload(world, next(names))
        _upload(world, next(names), bob=True)
    filters: dict[str, Any] = {"scope": scope, "q": "team" if with_q else None}
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        body = world.avatars.list(world.alice, limit=limit, starting_after=cursor, **filters)
        assert 0 < len(body["data"]) <= limit or (not body["data"] and not body["has_more"])
        if body["data"]:
            assert body["next_cursor"] == body["data"][-1]["id"]
            assert body["next_cursor"].startswith("av_")
        else:
            assert "next_cursor" not in body
        seen += _ids(body)
        created = created_per_page[pages] if pages < len(created_per_page) else 0
        for _ in range(created):  # uploads (and status changes) between pages
            _upload(world, next(names))
            _upload(world, next(names), bob=True)
        world.advance(11)
        pages += 1
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    final = _ids(world.avatars.list(world.alice, limit=100, starting_after=None, **filters))
    assert len(seen) == len(set(seen))  # no duplicate
    assert seen == final[: len(seen)]  # stable order, no gap
    # Whatever was created before the last page was fetched is in the walk.
    assert set(final) - set(seen) <= {a.id for a in world.avatars.avatars()}
    if len(final) <= 100:
        assert _walk(world, **filters) == final


@pytest.mark.req("EP-AV-2", "LIM-7", "CONV-4")
def test_a_cursor_longer_than_any_id_is_refused_by_the_shared_paging_check(world: World) -> None:
    limit = world.kernel.config.limits.cursor_max_length
    with pytest.raises(Unprocessable) as caught:
        world.avatars.list(world.alice, limit=20, starting_after="av_" + "x" * limit)
    assert (caught.value.code, caught.value.param) == ("validation.cursor", "starting_after")
    assert f"at most {limit} characters" in caught.value.message
