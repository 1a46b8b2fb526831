"""Rate limits, idempotency and pagination on the virtual clock (LIM-3..LIM-7, CONV-4..6)."""

from __future__ import annotations

import json
from collections import OrderedDict
from datetime import UTC, datetime
from enum import IntEnum
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.clock import Clock
from sim.config import LimitsConfig
from sim.errors import Conflict, RateLimited, Unprocessable
from sim.idempotency import IdempotencyStore, canonical_json, fingerprint, same_request
from sim.pagination import page, validate_limit
from sim.ratelimit import RateLimiter

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.req("LIM-3", "LIM-4")
def test_sliding_window_admits_ten_per_minute_with_exact_headers() -> None:
    clock = Clock(EPOCH)
    limiter = RateLimiter(clock, "session_create", limit=10, window_seconds=60)
    snaps = []
    for _ in range(10):
        snaps.append(limiter.hit("key"))
        clock.advance(1)
    assert [s.remaining for s in snaps] == list(range(9, -1, -1))
    assert snaps[0].reset_at == 60.0  # the first request leaves the window at t=60
    with pytest.raises(RateLimited) as excinfo:
        limiter.hit("key")  # t=10: the 11th request within a minute
    error = excinfo.value
    assert error.code == "rate_limited"
    assert error.retry_after == 50
    assert error.rate is not None and error.rate.remaining == 0
    assert limiter.hit("other-key").remaining == 9  # per key
    clock.advance_to(60.0)
    assert limiter.hit("key").remaining == 0  # one slot freed at t=60, taken again


@pytest.mark.req("LIM-3")
@given(gaps=st.lists(st.floats(min_value=0, max_value=30), min_size=1, max_size=60))
def test_never_more_than_limit_admitted_in_any_window(gaps: list[float]) -> None:
    clock = Clock(EPOCH)
    limiter = RateLimiter(clock, "x", limit=3, window_seconds=60)
    admitted: list[float] = []
    for gap in gaps:
        clock.advance(gap)
        try:
            limiter.hit("k")
            admitted.append(clock.now)
        except RateLimited as error:
            assert error.retry_after is not None and error.retry_after >= 1
    for t in admitted:
        assert sum(1 for u in admitted if t - 60 < u <= t) <= 3


def _store() -> tuple[Clock, IdempotencyStore]:
    clock = Clock(EPOCH)
    return clock, IdempotencyStore(clock, LimitsConfig())


@pytest.mark.req("LIM-5")
def test_same_key_same_body_replays_without_a_second_create() -> None:
    clock, store = _store()
    calls: list[int] = []

    def create() -> dict[str, Any]:
        calls.append(1)
        return {"id": f"sess_{len(calls)}"}

    first = store.run("org", "k1", "createSession", {"a": 1, "b": [1, 2]}, create)
    clock.advance(3600)
    again = store.run("org", "k1", "createSession", {"b": [1, 2], "a": 1}, create)
    assert first == ({"id": "sess_1"}, False)
    assert again == ({"id": "sess_1"}, True)
    assert len(calls) == 1
    with pytest.raises(Conflict) as excinfo:
        store.run("org", "k1", "createSession", {"a": 2}, create)
    assert excinfo.value.code == "idempotency_key.reused"
    # another organization's identical key is unrelated
    assert store.run("org2", "k1", "createSession", {"a": 2}, create)[1] is False


@pytest.mark.req("LIM-5")
def test_key_is_free_again_after_the_window() -> None:
    clock, store = _store()
    store.run("org", "k", "op", {"a": 1}, lambda: {"id": 1})
    clock.advance(24 * 3600)
    assert store.run("org", "k", "op", {"a": 2}, lambda: {"id": 2}) == ({"id": 2}, False)


@pytest.mark.req("LIM-5")
def test_refusals_are_not_stored() -> None:
    _, store = _store()

    def refuse() -> dict[str, Any]:
        raise Unprocessable("validation.required", "missing")

    with pytest.raises(Unprocessable):
        store.run("org", "k", "op", {"a": 1}, refuse)
    assert store.run("org", "k", "op", {"a": 1}, lambda: {"ok": True}) == ({"ok": True}, False)


@pytest.mark.req("LIM-6")
@pytest.mark.parametrize("key", ["", "x" * 256])
def test_idempotency_key_length_is_checked(key: str) -> None:
    _, store = _store()
    with pytest.raises(Unprocessable) as excinfo:
        store.run("org", key, "op", {}, lambda: {})
    assert (excinfo.value.code, excinfo.value.param) == (
        "idempotency_key.invalid",
        "Idempotency-Key",
    )
    assert store.run("org", "x" * 255, "op", {}, lambda: {"ok": 1})[1] is False


def _render(i: int) -> dict[str, Any]:
    return {"id": f"i{i}"}


@pytest.mark.req("CONV-4", "CONV-5")
def test_list_envelope_and_cursor_rules() -> None:
    items = list(range(5))
    first = page(items, limit=2, starting_after=None, cursor_of=lambda i: f"i{i}", render=_render)
    assert first == {
        "object": "list",
        "data": [{"id": "i0"}, {"id": "i1"}],
        "has_more": True,
        "next_cursor": "i1",
    }
    last = page(items, limit=2, starting_after="i3", cursor_of=lambda i: f"i{i}", render=_render)
    assert last == {
        "object": "list",
        "data": [{"id": "i4"}],
        "has_more": False,
        "next_cursor": "i4",
    }
    empty = page([], limit=2, starting_after=None, cursor_of=lambda i: f"i{i}", render=_render)
    assert empty == {"object": "list", "data": [], "has_more": False}
    with pytest.raises(Unprocessable):
        page(items, limit=2, starting_after="nope", cursor_of=lambda i: f"i{i}", render=_render)


@pytest.mark.req("CONV-6")
@given(n=st.integers(0, 40), limit=st.integers(1, 7))
def test_walking_visits_every_item_once(n: int, limit: int) -> None:
    items = list(range(n))
    seen: list[int] = []
    cursor = None
    for _ in range(n + 2):
        body = page(
            items,
            limit=limit,
            starting_after=cursor,
            cursor_of=lambda i: i,
            render=lambda i: {"id": i},
        )
        seen.extend(d["id"] for d in body["data"])
        if not body["has_more"]:
            break
        cursor = body["next_cursor"]
    assert seen == items


@pytest.mark.req("LIM-7")
@pytest.mark.parametrize("bad", [0, 101, -1, True, 2.5])
def test_limit_out_of_range_is_refused(bad: Any) -> None:
    with pytest.raises(Unprocessable) as excinfo:
        validate_limit(bad, 1, 100)
    assert excinfo.value.param == "limit"
    assert validate_limit(100, 1, 100) == 100


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from(["é", "\u2028", '"\\', "\x00\x1f", "\U0001f600"]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


class _Text(str):
    pass


class _Number(IntEnum):
    ONE = 1


def _reordered(value: Any) -> Any:
    """The same JSON written otherwise: keys in reverse order, fresh objects, and where a Python
    caller could, subclasses of the JSON types (which marshal refuses)."""
    if isinstance(value, dict):
        items = [(key, _reordered(item)) for key, item in reversed(value.items())]
        return OrderedDict(items) if len(items) % 2 else dict(items)
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    if type(value) is str and len(value) == 1:
        return _Text(value)
    if type(value) is int and value == 1:
        return _Number.ONE
    return json.loads(json.dumps(value))


def _variant(value: Any) -> Any:
    """Nearly the same JSON, but not the same: a number turned into its float or boolean twin."""
    if isinstance(value, dict):
        return {key: _variant(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_variant(item) for item in value]
    if type(value) is int and value in (0, 1):
        return float(value) if value else False
    return value


@pytest.mark.req("LIM-5")
@settings(max_examples=300, deadline=None)
@given(first=_JSON, other=_JSON, how=st.sampled_from(["same", "reordered", "variant", "other"]))
def test_two_requests_are_the_same_exactly_when_their_canonical_json_is(
    first: Any, other: Any, how: str
) -> None:
    """A fingerprint is a snapshot, compared by its canonical JSON only when the snapshots
    differ: the verdict is always the canonical comparison's, and the operation counts too."""
    second = {
        "same": first,
        "reordered": _reordered(first),
        "variant": _variant(first),
        "other": other,
    }[how]
    same = canonical_json(first) == canonical_json(second)
    assert same_request(fingerprint("op", first), fingerprint("op", second)) is same
    assert not same_request(fingerprint("op", first), fingerprint("op2", second))
