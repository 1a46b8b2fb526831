"""The model catalog and run creation: body validation, scopes, unknown/unavailable models.

(RES-MODEL-1, EP-MODEL-1, EP-RUN-1, AUTH-4, AUTH-5, AUTH-7)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import Conflict, DomainError, NotFound, PermissionDenied, Unprocessable
from sim.runs import CATALOG

if TYPE_CHECKING:
    from conftest import Media, World

MODEL_FIELDS = {
    "id",
    "available",
    "contract_revision",
    "revision",
    "description",
    "display_name",
    "family",
    "owner",
    "execution_modes",
    "execution_targets",
    "input_modalities",
    "output_modalities",
    "operations",
    "pricing",
}


@pytest.mark.req("RES-MODEL-1", "EP-MODEL-1", "CONV-1")
def test_every_model_has_the_contract_fields(world: World) -> None:
    body = world.runs.list_models(world.alice)
    assert body.keys() == {"object", "data"} and body["object"] == "list"
    ids = [m["id"] for m in body["data"]]
    assert ids == [spec.id for spec in CATALOG]
    for model in body["data"]:
        assert model.keys() >= MODEL_FIELDS
        assert model["object"] == "model"
        publisher, name = model["id"].split("/")
        assert publisher and name
        for field in (
            "execution_modes",
            "execution_targets",
            "input_modalities",
            "output_modalities",
            "aliases",
            "tags",
        ):
            assert all(isinstance(v, str) for v in model[field])
        assert model["pricing"]["unit"] in ("run", "second", "character")
        assert model["pricing"]["credits_per_unit"] >= 0
        assert set(model["request_schemas"]) == set(model["operations"])
        for schema in model["request_schemas"].values():
            jsonschema.Draft202012Validator.check_schema(schema)
    by_id = {m["id"]: m for m in body["data"]}
    assert by_id["sim/retired-model"]["available"] is False
    assert "internal" in by_id["sim/internal-speech"]["tags"]
    assert "video" in by_id["sim/portrait-video"]["output_modalities"]
    assert set(by_id["sim/portrait-video"]["input_modalities"]) == {"image", "audio"}


@pytest.mark.req("EP-MODEL-1", "AUTH-4")
def test_any_valid_key_lists_models_even_a_narrowly_scoped_one(world: World) -> None:
    for scopes in (None, frozenset({"runs:read"}), frozenset({"runs:write"}), frozenset()):
        caller = world.key(world.alice, scopes)  # type: ignore[arg-type]
        assert world.runs.list_models(caller)["data"]


@pytest.mark.req("EP-RUN-1", "RES-MODEL-1")
def test_unknown_and_unavailable_models(world: World) -> None:
    with pytest.raises(NotFound) as unknown:
        world.runs.create(world.alice, "sim/nope", {"input": {}})
    assert unknown.value.code == "model.not_found"
    with pytest.raises(Conflict) as retired:
        world.runs.create(world.alice, "sim/retired-model", {"input": {"prompt": "x"}})
    assert retired.value.code == "model.unavailable"
    assert world.billing.rows == []


@pytest.mark.req("EP-RUN-1")
@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({}, "validation.required", "input"),
        ({"input": "text"}, "validation.type", "input"),
        ({"input": {}}, "validation.required", "input.text"),
        ({"input": {"text": ""}}, "validation.range", "input.text"),
        ({"input": {"text": 5}}, "validation.type", "input.text"),
        ({"input": {"text": "a", "pitch": 3}}, "validation.unknown_field", "input.pitch"),
        ({"input": {"text": "a", "voice": "robot"}}, "validation.enum", "input.voice"),
        ({"input": {"text": "a"}, "operation": "sing"}, "validation.enum", "operation"),
        ({"input": {"text": "a"}, "external_id": ""}, "validation.range", "external_id"),
        ({"input": {"text": "a"}, "external_id": "e" * 129}, "validation.range", "external_id"),
        ({"input": {"text": "a"}, "metadata": []}, "validation.type", "metadata"),
        ({"input": {"text": "a"}, "metadata": {"k": "v" * 9000}}, "metadata.too_large", "metadata"),
        ({"input": {"text": "a"}, "priority": 1}, "validation.unknown_field", "priority"),
    ],
)
def test_invalid_bodies_are_refused_with_code_and_param(
    world: World, body: dict[str, Any], code: str, param: str
) -> None:
    with pytest.raises(Unprocessable) as error:
        world.runs.create(world.alice, "sim/speech", body)
    assert (error.value.code, error.value.param) == (code, param)
    assert world.billing.rows == []
    assert world.runs.runs() == []


_SCHEMA = next(s for s in CATALOG if s.id == "sim/echo-text").operations[0].request_schema()

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 30_000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
_inputs = st.fixed_dictionaries(
    {},
    optional={
        "prompt": st.one_of(st.text(max_size=8), _json_values),
        "max_characters": st.one_of(st.integers(-2, 30_000), _json_values),
        "extra": _json_values,
    },
)


@pytest.mark.req("EP-RUN-1", "RES-MODEL-1")
@settings(max_examples=80, deadline=None)
@given(raw=_inputs)
def test_published_request_schema_and_validation_agree(
    make_world: Callable[..., World], raw: dict[str, Any]
) -> None:
    world = make_world()
    schema_accepts = jsonschema.Draft202012Validator(_SCHEMA).is_valid(raw)
    try:
        world.runs.create(world.alice, "sim/echo-text", {"input": raw})
        accepted = True
    except Unprocessable as error:
        accepted = False
        assert error.code.startswith("validation.")
        assert error.param is not None and error.param.startswith("input")
    assert accepted == schema_accepts


@pytest.mark.req("AUTH-4", "AUTH-5")
@pytest.mark.parametrize(
    ("scopes", "allowed"),
    [
        (None, {"create", "read", "cancel", "delete", "assets"}),
        (frozenset({"runs:read", "runs:write"}), {"create", "read", "cancel", "delete", "assets"}),
        (frozenset({"runs:read"}), {"read", "assets"}),
        (frozenset({"runs:write"}), {"cancel", "delete"}),
        (frozenset(), set()),
    ],
)
def test_scopes_gate_every_run_operation(
    world: World, scopes: frozenset[str] | None, allowed: set[str]
) -> None:
    caller = world.key(world.alice, scopes)  # type: ignore[arg-type]
    run_a = world.speech()["id"]
    world.advance(60)
    run_b = world.speech()["id"]
    operations: dict[str, Callable[[], object]] = {
        "create": lambda: world.speech(caller),
        "read": lambda: (
            world.runs.retrieve(caller, run_a),
            world.runs.status(caller, run_a),
            world.runs.events(caller, run_a, starting_after=None, limit=10),
            world.runs.list(caller, limit=10, starting_after=None),
        ),
        "cancel": lambda: world.runs.cancel(caller, run_b),
        "delete": lambda: world.runs.delete(caller, run_a),
        "assets": lambda: world.assets.list(caller, limit=10, starting_after=None),
    }
    for name, call in operations.items():
        if name in allowed:
            call()
        else:
            with pytest.raises(PermissionDenied) as error:
                call()
            assert error.value.code == "api_key.scope_required", name


@pytest.mark.req("AUTH-7", "EP-RUN-1")
def test_another_organizations_run_is_not_found(world: World) -> None:
    run_id = world.speech()["id"]
    calls: list[Callable[[], object]] = [
        lambda: world.runs.retrieve(world.bob, run_id),
        lambda: world.runs.status(world.bob, run_id),
        lambda: world.runs.events(world.bob, run_id, starting_after=None, limit=10),
        lambda: world.runs.cancel(world.bob, run_id),
        lambda: world.runs.delete(world.bob, run_id),
    ]
    for call in calls:
        with pytest.raises(NotFound) as error:
            call()
        assert error.value.code == "run.not_found"
    assert world.runs.list(world.bob, limit=10, starting_after=None)["data"] == []
    assert world.runs.retrieve(world.alice, run_id)["status"] == "queued"


@pytest.mark.req("EP-RUN-1")
def test_media_inputs_must_be_readable_and_the_orgs_own(world: World, media: Media) -> None:
    theirs = world.assets.create_library_asset(world.bob.org_id, media.png(), "image/png", "image")
    audio = world.assets.create_library_asset(world.alice.org_id, media.wav(), "audio/wav", "audio")
    cases: list[tuple[dict[str, str], type[DomainError], str, str]] = [
        ({"image": theirs.id, "audio": audio.id}, NotFound, "asset.not_found", "input.image"),
        ({"image": audio.id, "audio": audio.id}, Unprocessable, "validation.format", "input.image"),
        (
            {"image": "not base64!", "audio": audio.id},
            Unprocessable,
            "validation.format",
            "input.image",
        ),
        (
            {"image": media.b64(b"GIF89a...."), "audio": audio.id},
            Unprocessable,
            "validation.format",
            "input.image",
        ),
        (
            {"image": media.b64(media.png()), "audio": media.b64(b"RIFF0000WAVE")},
            Unprocessable,
            "validation.format",
            "input.audio",
        ),
    ]
    for value, kind, code, param in cases:
        with pytest.raises(kind) as error:
            world.runs.create(world.alice, "sim/portrait-video", {"input": value})
        assert (error.value.code, error.value.param) == (code, param)
    assert world.runs.runs() == []
    assert world.assets.list(world.alice, limit=10, starting_after=None)["data"][0]["id"] == (
        audio.id
    )
