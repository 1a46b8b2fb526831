"""Outputs, assets and their content; listing runs and assets with cursors.

(RES-RUN-3, RES-ASSET-1, EP-ASSET-1, EP-RUN-1, CONV-4..6, AUTH-7)
"""

from __future__ import annotations

import io
import json
import wave
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from sim.errors import NotFound, Unprocessable
from sim.runs.content import mp4_boxes

if TYPE_CHECKING:
    from conftest import Media, World

ASSET_FIELDS = {
    "id",
    "object",
    "byte_size",
    "created_at",
    "deleted_at",
    "download_url",
    "duration_ms",
    "height",
    "width",
    "media_type",
    "modality",
    "schema_uri",
    "scope",
    "status",
}


def _content(world: World, asset_id: str) -> tuple[bytes, str]:
    return world.assets.content(world.alice, asset_id)


def _assets(world: World) -> dict[str, dict[str, Any]]:
    body = world.assets.list(world.alice, limit=100, starting_after=None)
    return {a["id"]: a for a in body["data"]}


@pytest.mark.req("RES-RUN-3", "EP-RUN-1")
def test_text_run_outputs_text_and_data_items(world: World) -> None:
    run_id = world.runs.create(
        world.alice, "sim/echo-text", {"input": {"prompt": "hello big world", "max_characters": 9}}
    )["id"]
    world.advance(30)
    body = world.runs.retrieve(world.alice, run_id)
    assert body["outputs"] == [
        {"modality": "text", "role": "primary", "type": "text", "text": "hello big"},
        {
            "modality": "json",
            "role": "auxiliary",
            "type": "data",
            "data": {"characters": 9, "words": 2},
        },
    ]
    assert body["credits"]["charged"] == 1  # 9 characters at 0.01 credits, rounded up
    output_events = [
        e
        for e in world.runs.events(world.alice, run_id, starting_after=None, limit=100)["data"]
        if e["type"] == "run.output"
    ]
    assert [e["part_id"] for e in output_events] == ["part_1", "part_2"]
    assert [e["data"] for e in output_events] == body["outputs"]


@pytest.mark.req("RES-RUN-3", "RES-ASSET-1", "EP-ASSET-1")
def test_speech_output_is_a_wav_asset_with_a_matching_file_object(world: World) -> None:
    run_id = world.speech(text="x" * 45)["id"]  # 3 s of speech
    world.advance(30)
    body = world.runs.retrieve(world.alice, run_id)
    (item,) = body["outputs"]
    assert (item["modality"], item["role"], item["type"]) == ("audio", "primary", "file")
    assert body["audio"] == item["file"]
    asset = _assets(world)[item["asset_id"]]
    assert asset.keys() == ASSET_FIELDS
    assert (asset["scope"], asset["status"], asset["modality"]) == ("run_output", "ready", "audio")
    assert (asset["width"], asset["height"], asset["schema_uri"]) == (None, None, None)
    assert asset["duration_ms"] == 3000 and asset["deleted_at"] is None
    assert item["file"]["url"] == asset["download_url"]
    assert asset["download_url"].endswith(f"/v1/assets/{asset['id']}/content")
    data, media_type = _content(world, asset["id"])
    assert media_type == "audio/wav" == item["file"]["content_type"]
    assert len(data) == asset["byte_size"] == item["file"]["file_size"]
    with wave.open(io.BytesIO(data)) as reader:
        rate = world.kernel.config.runs.audio_sample_rate
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, rate)
        assert reader.getnframes() == 3 * rate
        assert max(reader.readframes(100)) > 0  # not silence


@pytest.mark.req("RES-RUN-3", "RES-ASSET-1", "EP-ASSET-1")
def test_portrait_video_outputs_open_as_what_they_claim(world: World, media: Media) -> None:
    library = world.assets.create_library_asset(
        world.alice.org_id, media.png(), "image/png", "image"
    )
    run = world.runs.create(
        world.alice,
        "sim/portrait-video",
        {
            "input": {
                "image": library.id,
                "audio": media.b64(media.wav(seconds=2.5)),
                "resolution": "512x512",
            }
        },
    )
    assert run["credits"]["reserved"] == 25  # 2.5 s at 10 credits per second
    world.advance(30)
    body = world.runs.retrieve(world.alice, run["id"])
    assert body["status"] == "succeeded"
    video, poster, summary = body["outputs"]
    assert (video["modality"], video["role"], video["type"]) == ("video", "primary", "file")
    assert (poster["modality"], poster["role"]) == ("image", "auxiliary")
    assert (summary["modality"], summary["type"]) == ("json", "data")
    assert body["video"] == video["file"] and body["image"] == poster["file"]

    clip, kind = _content(world, video["asset_id"])
    assert kind == "video/mp4" and [box for box, _ in mp4_boxes(clip)] == [b"ftyp", b"mdat"]
    image_bytes, kind = _content(world, poster["asset_id"])
    with Image.open(io.BytesIO(image_bytes)) as image:
        image.load()
        assert (kind, image.format, image.size) == ("image/png", "PNG", (512, 512))
    raw, kind = _content(world, summary["asset_id"])
    assert kind == "application/json" and json.loads(raw) == summary["data"]
    assert summary["data"]["duration_ms"] == 2500

    assets = _assets(world)
    scopes = sorted(a["scope"] for a in assets.values())
    assert scopes == ["library", "run_input", "run_output", "run_output", "run_output"]
    (stored_input,) = [a for a in assets.values() if a["scope"] == "run_input"]
    assert (stored_input["modality"], stored_input["duration_ms"]) == ("audio", 2500)
    assert assets[summary["asset_id"]]["schema_uri"] is not None
    assert assets[video["asset_id"]]["width"] == 512
    assert body["credits"]["charged"] == 25


@pytest.mark.req("SIM-2", "RES-ASSET-1")
def test_generated_content_is_the_same_for_the_same_seed(make_world: Callable[..., World]) -> None:
    def download() -> bytes:
        world = make_world(seed=99)
        run_id = world.speech(text="deterministic")["id"]
        world.advance(60)
        (item,) = world.runs.retrieve(world.alice, run_id)["outputs"]
        return _content(world, item["asset_id"])[0]

    assert download() == download()


@pytest.mark.req("EP-ASSET-1", "AUTH-7")
def test_assets_are_private_to_their_organization(world: World, media: Media) -> None:
    mine = world.assets.create_library_asset(world.alice.org_id, media.png(), "image/png", "image")
    with pytest.raises(NotFound) as error:
        world.assets.content(world.bob, mine.id)
    assert error.value.code == "asset.not_found"
    assert world.assets.list(world.bob, limit=10, starting_after=None)["data"] == []
    with pytest.raises(NotFound):
        world.assets.content(world.alice, "asset_01ARZ3NDEKTSV4RRFFQ69G5FAV")


@pytest.mark.req("EP-ASSET-1")
def test_library_uploads_are_probed(world: World, media: Media) -> None:
    image = world.assets.create_library_asset(world.alice.org_id, media.png((30, 20)), "x", "image")
    assert (image.media_type, image.width, image.height) == ("image/png", 30, 20)
    with pytest.raises(Unprocessable):
        world.assets.create_library_asset(world.alice.org_id, b"nope", "image/png", "image")
    with pytest.raises(Unprocessable):
        world.assets.create_library_asset(world.alice.org_id, b"nope", "audio/wav", "audio")
    with pytest.raises(Unprocessable):
        world.assets.create_library_asset(world.alice.org_id, b"{}", "application/json", "model")


def _walk(list_page: Callable[[str | None], dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        body = list_page(cursor)
        seen += [item["id"] for item in body["data"]]
        if not body["has_more"]:
            if not body["data"]:
                assert "next_cursor" not in body
            return seen
        assert isinstance(body["next_cursor"], str) and len(body["next_cursor"]) <= 40
        cursor = body["next_cursor"]


@pytest.mark.req("EP-RUN-1", "EP-ASSET-1", "CONV-4", "CONV-5", "CONV-6")
@settings(max_examples=20, deadline=None)
@given(count=st.integers(0, 12), limit=st.integers(1, 5), created_during=st.integers(0, 3))
def test_walking_runs_and_assets_visits_every_item_once_newest_first(
    make_world: Callable[..., World], count: int, limit: int, created_during: int
) -> None:
    world = make_world()
    made = []
    for _ in range(count):
        made.append(world.speech()["id"])
        world.advance(1)
    world.advance(100)
    pages: list[dict[str, Any]] = []

    def runs_page(cursor: str | None) -> dict[str, Any]:
        if pages and len(pages) <= created_during:
            world.speech()  # created mid-walk: lands before the cursor, never visited twice
        pages.append(world.runs.list(world.alice, limit=limit, starting_after=cursor))
        return pages[-1]

    assert _walk(runs_page) == made[::-1]
    assets = [a.id for a in world.assets.assets() if a.org_id == world.alice.org_id]
    walked = _walk(lambda c: world.assets.list(world.alice, limit=limit, starting_after=c))
    assert walked == assets[::-1] and len(set(walked)) == len(walked)


@pytest.mark.req("EP-RUN-1", "EP-ASSET-1", "LIM-7")
def test_list_parameters_out_of_range_are_refused(world: World) -> None:
    for call in (world.runs.list, world.assets.list):
        for limit in (0, 101):
            with pytest.raises(Unprocessable) as error:
                call(world.alice, limit=limit, starting_after=None)
            assert (error.value.code, error.value.param) == ("validation.range", "limit")
        with pytest.raises(Unprocessable) as long_cursor:
            call(world.alice, limit=10, starting_after="run_" + "A" * 37)
        assert long_cursor.value.param == "starting_after"
        with pytest.raises(Unprocessable) as unknown:
            call(world.alice, limit=10, starting_after="run_01ARZ3NDEKTSV4RRFFQ69G5FAV")
        assert unknown.value.code == "validation.cursor"
