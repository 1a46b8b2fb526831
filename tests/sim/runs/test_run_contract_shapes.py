"""Every resource the run domain renders validates against the contract's component schemas.

Resources are produced in every state they can be in (queued with and without capacity, running,
succeeded for each model, failed, canceled, deleted; deletions pending → completed/failed) and
checked with the simulator's own ``spec/openapi.yaml`` components, which forbid extra fields.

(RES-RUN-1, RES-RUN-3, RES-RUN-4, RES-RUN-5, RES-RUN-6, RES-ASSET-1, RES-MODEL-1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from jsonschema import Draft202012Validator

from harness.contract import component_schema, load_spec

if TYPE_CHECKING:
    from conftest import Media, World


@pytest.fixture(scope="module")
def schema() -> Callable[[str], Draft202012Validator]:
    spec = load_spec()
    cache: dict[str, Draft202012Validator] = {}

    def get(name: str) -> Draft202012Validator:
        if name not in cache:
            cache[name] = Draft202012Validator(
                component_schema(spec, name), format_checker=Draft202012Validator.FORMAT_CHECKER
            )
        return cache[name]

    return get


def _check(validator: Draft202012Validator, instance: Any) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]
    assert errors == []


@pytest.mark.req(
    "RES-RUN-1", "RES-RUN-3", "RES-RUN-4", "RES-RUN-5", "RES-RUN-6", "RES-ASSET-1", "RES-MODEL-1"
)
def test_rendered_resources_match_the_contract_in_every_state(
    make_world: Callable[..., World],
    models: Callable[..., dict[str, Any]],
    media: Media,
    schema: Callable[[str], Draft202012Validator],
) -> None:
    world = make_world(run_workers=2, capacity_wait_seconds=5.0, models=models(8.0))
    seen: list[dict[str, Any]] = []

    def snapshot() -> None:
        for run in world.runs.runs():
            body = world.runs.retrieve(world.alice, run.id)
            _check(schema("Run"), body)
            _check(schema("RunStatus"), world.runs.status(world.alice, run.id))
            seen.append(body)
        _check(schema("RunList"), world.runs.list(world.alice, limit=100, starting_after=None))
        _check(schema("AssetList"), world.assets.list(world.alice, limit=100, starting_after=None))
        for run in world.runs.runs():
            _check(
                schema("RunEventList"),
                world.runs.events(world.alice, run.id, starting_after=None, limit=500),
            )
        for deletion in world.runs.deletions():
            _check(schema("RunDeletion"), deletion.to_resource(world.kernel.clock))

    _check(schema("ModelList"), world.runs.list_models(world.alice))
    _check(schema("RunList"), world.runs.list(world.alice, limit=10, starting_after=None))
    text = world.runs.create(world.alice, "sim/echo-text", {"input": {"prompt": "hey"}})
    video = world.runs.create(
        world.alice,
        "sim/portrait-video",
        {
            "input": {
                "image": media.b64(media.png()),
                "audio": media.b64(media.wav()),
            }
        },
    )
    speech = world.speech()  # waits for capacity
    canceled = world.speech()
    snapshot()
    world.runs.cancel(world.alice, canceled["id"])
    world.advance(1)
    snapshot()
    world.advance(10)  # text and video finish; speech times out
    snapshot()
    late = world.speech()
    world.runs.delete(world.alice, text["id"])
    world.runs.fail_next_purge()
    world.runs.delete(world.alice, video["id"])
    snapshot()
    world.advance(60)
    snapshot()
    statuses = {(b["status"], "capacity_wait" in b, "eta" in b, "deleted_at" in b) for b in seen}
    assert {
        ("queued", True, False, False),
        ("queued", False, True, False),
        ("running", False, True, False),
        ("succeeded", False, False, False),
        ("succeeded", False, False, True),
        ("failed", False, False, False),
        ("canceled", False, False, False),
    } <= statuses
    assert {d.status for d in world.runs.deletions()} == {"completed", "failed"}
    assert world.runs.retrieve(world.alice, speech["id"])["error"]["code"] == "capacity_timeout"
    assert world.runs.retrieve(world.alice, late["id"])["status"] == "succeeded"
