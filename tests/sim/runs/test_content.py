"""Generated media: every recipe renders a well-formed file of exactly its announced size.

(RES-ASSET-1, EP-ASSET-1)
"""

from __future__ import annotations

import io
import wave

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from sim.runs.content import Mp4Clip, PngImage, WavTone, json_bytes, mp4_boxes, png


@pytest.mark.req("RES-ASSET-1", "EP-ASSET-1")
@settings(max_examples=25, deadline=None)
@given(width=st.integers(1, 96), height=st.integers(1, 96), seed=st.integers(0, 2**32 - 1))
def test_png_opens_with_pillow_at_its_size(width: int, height: int, seed: int) -> None:
    recipe = PngImage(width=width, height=height, seed=seed)
    data = recipe.render()
    assert len(data) == recipe.byte_size and data == png(width, height, seed)
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        assert (image.format, image.size, image.mode) == ("PNG", (width, height), "RGB")


@pytest.mark.req("RES-ASSET-1", "EP-ASSET-1")
@settings(max_examples=25, deadline=None)
@given(
    duration_ms=st.integers(0, 4000),
    rate=st.sampled_from([8000, 16000, 24000]),
    seed=st.integers(0, 2**32 - 1),
)
def test_wav_opens_with_wave_and_lasts_as_long_as_announced(
    duration_ms: int, rate: int, seed: int
) -> None:
    recipe = WavTone(duration_ms=duration_ms, sample_rate=rate, seed=seed)
    data = recipe.render()
    assert len(data) == recipe.byte_size
    with wave.open(io.BytesIO(data)) as reader:
        assert reader.getframerate() == rate
        assert reader.getnframes() == duration_ms * rate // 1000


@pytest.mark.req("RES-ASSET-1", "EP-ASSET-1")
@settings(max_examples=25, deadline=None)
@given(duration_ms=st.integers(0, 20_000), seed=st.integers(0, 2**32 - 1))
def test_mp4_like_container_is_a_walkable_box_sequence(duration_ms: int, seed: int) -> None:
    recipe = Mp4Clip(duration_ms=duration_ms, width=256, height=256, seed=seed)
    data = recipe.render()
    assert len(data) == recipe.byte_size
    boxes = mp4_boxes(data)
    assert [kind for kind, _ in boxes] == [b"ftyp", b"mdat"]
    assert sum(size for _, size in boxes) == len(data)
    assert data[8:12] == b"isom"
    assert recipe.render() == data


@pytest.mark.req("RES-ASSET-1")
def test_broken_containers_are_detected_and_json_is_canonical() -> None:
    with pytest.raises(ValueError, match="box"):
        mp4_boxes(b"\x00\x00\x00\x40ftypisom")
    assert json_bytes({"b": 1, "a": [1, 2]}) == b'{"a":[1,2],"b":1}'
