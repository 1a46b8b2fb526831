"""Create-body validation (EP-SESS-1 … EP-SESS-3, EP-PIPE-1), through the service."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sim.config import SimConfig
from sim.errors import Conflict, DomainError, InvalidRequest, NotFound, Unprocessable
from sim.sessions import validation
from sim.sessions.validation import parse_session_request
from sim.settings import Settings
from sim.values import check_values
from tests.world import LIVEKIT, session_body

if TYPE_CHECKING:
    from conftest import World

STOCK = "av_stock_anna"
PROCESSING = "av_processing"
TRANSPORT = LIVEKIT


def body(**overrides: Any) -> dict[str, Any]:
    return session_body(STOCK, **overrides)


def _refusal(world: World, payload: dict[str, Any]) -> DomainError:
    with pytest.raises(DomainError) as info:
        world.service.create(world.caller(), payload)
    return info.value


@pytest.mark.req("EP-SESS-2", "RES-TRN-1")
@pytest.mark.parametrize("kind", ["websocket", "pipecat", "carrier-pigeon"])
def test_unsupported_transport(world: World, kind: str) -> None:
    error = _refusal(world, body(transport={"type": kind}))
    assert isinstance(error, InvalidRequest)
    assert (error.code, error.param) == ("transport.unsupported", "transport.type")


@pytest.mark.req("EP-SESS-3")
def test_reserved_metadata_keys(world: World) -> None:
    error = _refusal(world, body(metadata={"_avatar.other": 1}))
    assert isinstance(error, InvalidRequest)
    assert (error.code, error.param) == ("metadata.reserved_key", "metadata._avatar.other")
    error = _refusal(world, body(metadata={"_avatar.debug_record": "yes"}))
    assert isinstance(error, Unprocessable) and error.code == "validation.type"
    caller = world.caller()
    made = world.service.create(caller, body(metadata={"_avatar.debug_record": True, "k": "v"}))
    assert made["metadata"] == {"_avatar.debug_record": True, "k": "v"}


@pytest.mark.req("EP-SESS-1")
def test_metadata_size_counts_utf8_bytes(world: World) -> None:
    limit = world.kernel.config.limits.metadata_max_bytes
    overhead = len('{"k":""}')
    fits = {"k": "x" * (limit - overhead)}
    world.service.create(world.caller(), body(metadata=fits))
    # Two-byte characters: the same count of characters no longer fits.
    too_big = {"k": "é" * (limit - overhead)}
    error = _refusal(world, body(metadata=too_big))
    assert isinstance(error, Unprocessable)
    assert (error.code, error.param) == ("metadata.too_large", "metadata")


@pytest.mark.req("EP-SESS-1")
@pytest.mark.parametrize(
    ("payload", "code", "param"),
    [
        ({"transport": body()["transport"]}, "validation.required", "avatar_id"),
        ({"avatar_id": 5, "transport": body()["transport"]}, "validation.type", "avatar_id"),
        ({"avatar_id": "av_stock_anna"}, "validation.required", "transport"),
        (body(transport="livekit"), "validation.type", "transport"),
        (body(transport={"url": "wss://x"}), "validation.required", "transport.type"),
        (
            body(transport={"type": "livekit", "url": "https://x", "room_name": "r"}),
            "validation.format",
            "transport.url",
        ),
        (
            body(transport={"type": "livekit", "url": "wss://x"}),
            "validation.required",
            "transport.room_name",
        ),
        (
            body(
                transport={
                    "type": "livekit",
                    "url": "wss://x",
                    "room_name": "r",
                    "audio_source": "mic",
                }
            ),
            "validation.enum",
            "transport.audio_source",
        ),
        (
            body(transport={"type": "livekit", "url": "wss://x", "room_name": "r", "x": 1}),
            "validation.unknown_field",
            "transport.x",
        ),
        (body(idle_timeout_seconds=0), "validation.range", "idle_timeout_seconds"),
        (body(idle_timeout_seconds=601), "validation.range", "idle_timeout_seconds"),
        (body(idle_timeout_seconds=True), "validation.type", "idle_timeout_seconds"),
        (body(idle_timeout_seconds=30.5), "validation.type", "idle_timeout_seconds"),
        (body(max_duration_seconds=0), "validation.range", "max_duration_seconds"),
        (body(max_duration_seconds=3601), "validation.range", "max_duration_seconds"),
        (body(quality="ultra"), "validation.enum", "quality"),
        (body(metadata=[1]), "validation.type", "metadata"),
        (body(colour="red"), "validation.unknown_field", "colour"),
    ],
)
def test_schema_failures_are_422(
    world: World, payload: dict[str, Any], code: str, param: str
) -> None:
    error = _refusal(world, payload)
    assert isinstance(error, Unprocessable)
    assert (error.code, error.param) == (code, param)
    assert world.service.sessions() == []  # nothing was created


@pytest.mark.req("EP-SESS-1", "RES-SESS-3")
def test_defaults_and_bounds_are_accepted() -> None:
    config = SimConfig()
    parsed = parse_session_request(body(), Settings.of(config), config.limits)
    assert parsed.idle_timeout_seconds == 30
    assert parsed.max_duration_seconds == 600
    assert parsed.quality == "standard"
    assert parsed.transport.audio_source == "track"
    assert parsed.metadata == {}
    edge = parse_session_request(
        body(idle_timeout_seconds=600, max_duration_seconds=3600, quality="mock"),
        Settings.of(config),
        config.limits,
    )
    assert (edge.idle_timeout_seconds, edge.max_duration_seconds) == (600, 3600)


@pytest.mark.req("EP-SESS-1")
def test_avatar_must_exist_and_be_ready(world: World) -> None:
    error = _refusal(world, body(avatar_id="av_nope"))
    assert isinstance(error, NotFound) and error.param == "avatar_id"
    error = _refusal(world, body(avatar_id=PROCESSING))
    assert isinstance(error, Conflict) and error.code == "avatar.not_ready"


@pytest.mark.req("EP-PIPE-1")
def test_pipecat_body(world: World) -> None:
    caller = world.caller()
    with pytest.raises(Unprocessable) as info:
        world.service.create_pipecat(caller, {"avatar_id": "av_stock_anna", "relay_type": "sse"})
    assert (info.value.code, info.value.param) == ("validation.enum", "relay_type")
    with pytest.raises(Unprocessable) as info:
        world.service.create_pipecat(
            caller, {"avatar_id": "av_stock_anna", "transport": {"type": "livekit"}}
        )
    assert info.value.code == "validation.unknown_field"
    with pytest.raises(Unprocessable) as info:
        world.service.create_pipecat(
            caller, {"avatar_id": "av_stock_anna", "max_duration_seconds": 4000}
        )
    assert info.value.code == "validation.range"


@pytest.mark.req("EP-SESS-1")
@settings(max_examples=200, deadline=None)
@given(
    names=st.lists(
        st.sampled_from(["avatar_id", "transport", "quality", "metadata"]) | st.text(max_size=5),
        max_size=6,
    )
)
def test_unknown_fields_names_the_first_unknown_in_sorted_order(names: list[str]) -> None:
    """A body whose fields are all known skips the sorted scan; the answer is still the scan's:
    nothing when every field is known, else the first unknown field in sorted order."""
    fields = validation._SESSION_FIELDS
    unknown = sorted(set(names) - set(fields))
    try:
        validation._unknown_fields(dict.fromkeys(names), fields)
    except Unprocessable as error:
        assert unknown and error.param == unknown[0]
    else:
        assert not unknown


def _answer(parse: Any, payload: Any) -> Any:
    """What a parser makes of ``payload``: its request, or its refusal as the envelope shows it."""
    try:
        return parse(payload, _SETTINGS, _CONFIG.limits)
    except DomainError as error:
        return (type(error).__name__, error.code, error.param, error.message)


_CONFIG = SimConfig()
_SETTINGS = Settings.of(_CONFIG)
#: Values a field may hold: the right kind, in and out of range, and the near misses.
_ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=100_000),
    st.sampled_from([0.0, 30.0, 600.0, 600.5, float(2**53)]),
    st.sampled_from(["", "x", "av_stock_anna", "av_processing", *validation.QUALITIES]),
    st.sampled_from(["track", "data_stream", "wss://r.example", "wss://", "https://r", "livekit"]),
    st.text(max_size=4),
    st.just([]),
)
_LIMITS = _CONFIG.limits
_METADATA = st.dictionaries(
    st.sampled_from(["k", "_avatar.debug_record", "_avatar.x", "z"]),
    st.booleans() | st.text(max_size=3) | st.just("y" * 600),
    max_size=3,
)
#: Valid bodies, with and without each optional field.
_VALID = st.fixed_dictionaries(
    {
        "avatar_id": st.just(STOCK),
        "transport": st.fixed_dictionaries(
            {
                "type": st.just("livekit"),
                "url": st.just("wss://r.example"),
                "room_name": st.just("r"),
            },
            optional={
                "worker_token": st.just("tok"),
                "audio_source": st.sampled_from(validation.AUDIO_SOURCES),
            },
        ),
    },
    optional={
        "idle_timeout_seconds": st.integers(
            _LIMITS.idle_timeout_min_seconds, _LIMITS.idle_timeout_max_seconds
        ),
        "max_duration_seconds": st.integers(
            _LIMITS.max_duration_min_seconds, _LIMITS.max_duration_ceiling_seconds
        ),
        "quality": st.sampled_from(validation.QUALITIES),
        "metadata": _METADATA,
    },
)
_DROP = object()
#: Where a change may land: each field of the body or its transport, and one unknown to each.
_PLACES = st.sampled_from(
    [(None, name) for name in [*sorted(validation._SESSION_FIELDS), "colour"]]
    + [("transport", name) for name in [*sorted(validation._LIVEKIT_FIELDS), "extra"]]
)
#: The near misses, each as likely as any other kind of change.
_NEAR_MISSES = st.sampled_from(["", True, False, 600.0, 600.5, 0, -1, 10**7, None, [], "mic"])
_CHANGES = st.lists(
    st.tuples(_PLACES, _NEAR_MISSES | _ANY_VALUE | _METADATA | st.just(_DROP)), max_size=3
)


def _changed(payload: dict[str, Any], changes: list[tuple[tuple[str | None, str], Any]]) -> Any:
    for (within, name), value in changes:
        target = payload if within is None else payload.get(within)
        if not isinstance(target, dict):
            continue
        if value is _DROP:
            target.pop(name, None)
        else:
            target[name] = value
    return payload


_BODIES = st.one_of(st.builds(_changed, _VALID, _CHANGES), _ANY_VALUE)


@pytest.mark.req("EP-SESS-1", "EP-SESS-2", "EP-SESS-3")
@settings(max_examples=600, deadline=None)
@given(payload=_BODIES)
@example(payload=body(avatar_id=""))
@example(payload=body(idle_timeout_seconds=600.0))
@example(payload=body(max_duration_seconds=True))
@example(payload=body(quality="ultra"))
@example(payload=body(metadata={"_avatar.x": 1}))
@example(payload=body(metadata=[]))
@example(payload=body(transport={**TRANSPORT, "room_name": ""}))
@example(payload=body(transport={**TRANSPORT, "worker_token": ""}))
@example(payload=body(transport={**TRANSPORT, "url": "https://r"}))
@example(payload=body(transport={**TRANSPORT, "url": "wss://"}))
@example(payload=body(transport={**TRANSPORT, "url": "wss://\n"}))
@example(payload=body(transport={**TRANSPORT, "url": "wss://\nx"}))
@example(payload=body(transport={**TRANSPORT, "url": "wss://x\n"}))
@example(payload=body(transport={**TRANSPORT, "url": "WSS://x"}))
@example(payload=body(transport={**TRANSPORT, "url": "wss:/x"}))
@example(payload=body(transport={**TRANSPORT, "audio_source": "mic"}))
@example(payload=body(transport={**TRANSPORT, "extra": 1}))
def test_the_plain_body_path_gives_the_full_paths_answer(payload: Any) -> None:
    """``parse_session_request`` reads a plainly valid body straight through and hands any other
    to the full path: whichever it takes, the request or the refusal is the full path's."""
    assert _answer(parse_session_request, payload) == _answer(
        validation._parse_session_request, payload
    )


@pytest.mark.req("EP-SESS-1")
def test_the_plain_body_path_reads_the_configuration_it_is_given() -> None:
    """The plain path reads the defaults and bounds of the settings it is given: another
    configuration, and then the first again, each get their own."""
    other = SimConfig.model_validate(
        {
            "sessions": {"default_quality": "lite", "default_audio_source": "data_stream"},
            "limits": {"idle_timeout_default_seconds": 45, "max_duration_default_seconds": 120},
        }
    )
    for config in (_CONFIG, other, _CONFIG, other):
        limits, sessions, compiled = config.limits, config.sessions, Settings.of(config)
        quick = validation._plain_session_request(body(), compiled)
        assert quick is not None
        assert quick == validation._parse_session_request(body(), compiled, limits)
        assert quick.quality == sessions.default_quality
        assert quick.idle_timeout_seconds == limits.idle_timeout_default_seconds
        assert quick.max_duration_seconds == limits.max_duration_default_seconds
        assert quick.transport.audio_source == sessions.default_audio_source
    assert other.sessions.default_quality != _CONFIG.sessions.default_quality
    too_short = body(max_duration_seconds=_CONFIG.limits.max_duration_min_seconds - 1)
    assert validation._plain_session_request(too_short, _SETTINGS) is None


def test_the_plain_body_path_takes_the_bodies_clients_send() -> None:
    """The shortcut is really taken for the bodies clients send (else it only costs), and so is
    the door's one-pass reading of a create's parameters (``plain_create``)."""
    limits = _CONFIG.limits
    sent = [
        body(),
        body(quality="mock", idle_timeout_seconds=60, max_duration_seconds=900),
        body(transport={**TRANSPORT, "audio_source": "data_stream", "worker_token": "t"}),
    ]
    for payload in sent:
        quick = validation._plain_session_request(payload, _SETTINGS)
        assert quick is not None
        assert quick == validation._parse_session_request(payload, _SETTINGS, limits)
        for params in ({"body": payload}, {"body": payload, "idempotency_key": "k" * 16}):
            assert validation.plain_create(params, _SETTINGS) == quick
            # ... and the service takes the request as read, without reading it again
            assert parse_session_request(quick, _SETTINGS, limits) is quick
    # A body with metadata takes the full path (its checks are the full path's alone).
    assert validation._plain_session_request(body(metadata={"k": "v"}), _SETTINGS) is None


#: Values that are not JSON every answer can carry back, or that only just are.
_ODD_VALUES = st.sampled_from(
    ["\ud800", "caf\u00e9", "x\udfff", float("nan"), float("inf"), 1.5, 10**400, -(10**400)]
)
#: Metadata whose values ``sim.values`` may refuse, at any depth up to four levels.
_ODD_METADATA = st.dictionaries(
    st.sampled_from(["k", "_avatar.debug_record", "_avatar.x", "\ud800"]),
    st.recursive(
        _ODD_VALUES | st.booleans() | st.text(max_size=2),
        lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.just("n"), inner),
        max_leaves=4,
    ),
    max_size=2,
)
_ODD_CHANGES = st.lists(
    st.tuples(_PLACES, _ODD_VALUES | _ODD_METADATA | _NEAR_MISSES | st.just(_DROP)), max_size=3
)
#: A create's parameters: a body (plain, changed, odd or none), maybe a key, maybe another name.
_PARAMS = st.builds(
    lambda payload, extra: {**payload, **extra},
    st.fixed_dictionaries(
        {},
        optional={
            "body": st.one_of(
                st.builds(_changed, _VALID, _CHANGES),
                st.builds(_changed, _VALID, _ODD_CHANGES),
                _ANY_VALUE,
            )
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "idempotency_key": st.none() | st.text(max_size=3) | _ODD_VALUES | st.integers(),
            "limit": st.integers(0, 3) | st.just([]),
        },
    ),
)


@pytest.mark.req("EP-SESS-1", "EP-SESS-2", "EP-SESS-3")
@settings(max_examples=600, deadline=None)
@given(params=_PARAMS, depth=st.integers(1, 4))
@example(params={"body": body(metadata={"k": float("nan")})}, depth=4)
@example(params={"body": body(metadata={"k": {"n": {"n": 1}}})}, depth=3)
@example(params={"body": body(avatar_id="\ud800")}, depth=4)
@example(params={"body": body(transport={**TRANSPORT, "room_name": "\udfff"})}, depth=4)
@example(params={"body": body(), "idempotency_key": "\ud800"}, depth=4)
@example(params={"body": body(), 1: "k"}, depth=4)
@example(params={"body": body()}, depth=1)
def test_the_doors_one_pass_over_a_create_is_the_general_steps(
    params: dict[Any, Any], depth: int
) -> None:
    """``plain_create`` answers only for parameters that ``check_values`` accepts at that depth
    and whose body ``parse_session_request``'s full path reads as that very request."""
    limits, compiled = _CONFIG.limits, replace(_SETTINGS, json_max_depth=depth)
    quick = validation.plain_create(params, compiled)
    if quick is not None:
        check_values(params, max_depth=depth)  # raises if the door should have refused
        assert quick == validation._parse_session_request(params["body"], compiled, limits)
