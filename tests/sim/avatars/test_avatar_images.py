"""Portrait checks by content (EP-AV-1, GAP-AV-3)."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from sim.avatars import check_portrait
from sim.config import AvatarConfig
from sim.errors import Unprocessable

CONFIG = AvatarConfig()


def _png_with_header(width: int, height: int) -> bytes:
    """A syntactically valid PNG header claiming ``width`` x ``height`` with almost no data."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0"))
        + chunk(b"IEND", b"")
    )


def _refusal(data: bytes, config: AvatarConfig = CONFIG) -> Unprocessable:
    with pytest.raises(Unprocessable) as caught:
        check_portrait(data, config)
    error = caught.value
    assert (error.type, error.code, error.param) == (
        "unprocessable",
        "avatar.image_invalid",
        "image",
    )
    return error


@pytest.mark.req("EP-AV-1")
@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
@pytest.mark.parametrize("size", [(64, 64), (128, 160), (640, 480), (64, 8192)])
def test_png_and_jpeg_within_bounds_are_accepted(
    fmt: str, size: tuple[int, int], make_image: Callable[..., bytes]
) -> None:
    data = make_image(fmt, size)
    info = check_portrait(data, CONFIG)
    assert info.format == fmt.lower()
    assert info.media_type == f"image/{fmt.lower()}"
    assert (info.width, info.height) == size
    assert info.byte_size == len(data)


@pytest.mark.req("EP-AV-1")
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(lambda img: img("GIF"), "GIF images are not accepted", id="gif"),
        pytest.param(lambda img: img("BMP"), "BMP images are not accepted", id="bmp"),
        pytest.param(lambda img: img("WEBP"), "WEBP images are not accepted", id="webp"),
        pytest.param(lambda img: b"hello, I am a text file\n" * 20, "not a PNG or JPEG", id="text"),
        pytest.param(lambda img: b"", "empty", id="empty"),
        pytest.param(lambda img: img("PNG")[:-40], "corrupt or truncated", id="truncated-png"),
        pytest.param(lambda img: img("PNG")[:60], "corrupt or truncated", id="png-header-only"),
        pytest.param(
            lambda img: img("JPEG", (256, 256))[:400], "corrupt or truncated", id="truncated-jpeg"
        ),
        pytest.param(lambda img: img("PNG", (1, 1)), "1x1 px", id="1x1"),
        pytest.param(lambda img: img("PNG", (63, 500)), "63x500 px", id="side-too-small"),
        pytest.param(lambda img: img("PNG", (8193, 64)), "8193x64 px", id="side-too-large"),
        pytest.param(
            lambda img: _png_with_header(10_000, 10_000), "far too large", id="bomb-warning"
        ),
        pytest.param(
            lambda img: _png_with_header(50_000, 50_000), "far too large", id="bomb-error"
        ),
    ],
)
def test_refusals_name_the_reason(
    data: Callable[[Callable[..., bytes]], bytes], reason: str, make_image: Callable[..., bytes]
) -> None:
    error = _refusal(data(make_image))
    assert reason in error.message


@pytest.mark.req("EP-AV-1")
def test_file_over_the_byte_limit_is_refused_before_decoding(
    make_image: Callable[..., bytes],
) -> None:
    data = make_image("PNG", (256, 256))
    small = AvatarConfig(image_max_bytes=len(data) - 1)
    assert f"larger than {len(data) - 1} bytes" in _refusal(data, small).message
    assert check_portrait(data, AvatarConfig(image_max_bytes=len(data))).byte_size == len(data)


@pytest.mark.req("EP-AV-1")
def test_corrupted_pixel_data_in_a_complete_png_is_refused(
    make_image: Callable[..., bytes],
) -> None:
    data = bytearray(make_image("PNG", (128, 128)))
    start = data.index(b"IDAT") + 8
    data[start : start + 16] = bytes(16)  # break the compressed stream, keep the file's length
    _refusal(bytes(data))


@pytest.mark.req("EP-AV-1")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=2048))
def test_arbitrary_bytes_are_accepted_or_refused_with_the_envelope_code(data: bytes) -> None:
    # Whatever the bytes, the check answers with a portrait or the one refusal code: a decoder's
    # own exception never escapes.
    try:
        outcome = check_portrait(data, CONFIG).format
    except Unprocessable as error:
        outcome = error.code
    assert outcome in ("png", "jpeg", "avatar.image_invalid")


@pytest.mark.req("EP-AV-1")
@settings(max_examples=25, deadline=None)
@given(
    fmt=st.sampled_from(["PNG", "JPEG"]),
    width=st.integers(min_value=1, max_value=300),
    height=st.integers(min_value=1, max_value=300),
)
def test_accepted_exactly_when_both_sides_are_within_bounds(
    fmt: str, width: int, height: int, make_image: Callable[..., bytes]
) -> None:
    config = AvatarConfig(image_min_side_px=64, image_max_side_px=256)
    data = make_image(fmt, (width, height))
    inside = 64 <= width <= 256 and 64 <= height <= 256
    if inside:
        assert check_portrait(data, config).width == width
    else:
        assert f"{width}x{height} px" in _refusal(data, config).message


@pytest.mark.req("EP-AV-1")
def test_format_is_judged_by_content_not_by_extension() -> None:
    # A JPEG renamed .png is still a JPEG: accepted, and reported as what it really is.
    buffer = io.BytesIO()
    Image.new("L", (100, 100), 128).save(buffer, format="JPEG")
    assert check_portrait(buffer.getvalue(), CONFIG).format == "jpeg"


@pytest.mark.req("EP-AV-1")
@settings(max_examples=60, deadline=None)
@given(fmt=st.sampled_from(["PNG", "JPEG"]), cut=st.integers(min_value=0, max_value=10_000))
def test_every_truncation_of_a_valid_image_is_refused(
    fmt: str, cut: int, make_image: Callable[..., bytes]
) -> None:
    data = make_image(fmt, (96, 80))
    # A PNG's last 4 bytes are the CRC of its empty end chunk: no image data, and Pillow
    # tolerates their loss. Every cut that loses more than that is refused.
    truncated = data[: cut % (len(data) - 4)]
    _refusal(truncated)


@pytest.mark.req("EP-AV-1")
@settings(max_examples=60, deadline=None)
@given(
    fmt=st.sampled_from(["PNG", "JPEG"]),
    position=st.integers(min_value=0, max_value=10_000),
    value=st.integers(min_value=0, max_value=255),
)
def test_a_damaged_byte_never_escapes_as_a_decoder_exception(
    fmt: str, position: int, value: int, make_image: Callable[..., bytes]
) -> None:
    data = bytearray(make_image(fmt, (96, 80)))
    data[position % len(data)] = value
    try:
        outcome = check_portrait(bytes(data), CONFIG).format
    except Unprocessable as error:
        outcome = error.code
    assert outcome in ("png", "jpeg", "avatar.image_invalid")
