"""Portrait checks for ``POST /v1/avatars`` (EP-AV-1, GAP-AV-3).

The upload is judged by its bytes, never by the file name or the declared content type: it must
be a PNG or a JPEG that Pillow can decode, each side within the configured bounds, and no larger
than the configured size. Every refusal is ``Unprocessable('avatar.image_invalid', param='image')``
with a message naming the reason, so a customer knows what to fix.

Decoding happens in memory. The cheap checks (size, format, dimensions from the header) run before
any pixel is decoded, so an oversized or "decompression bomb" image costs nothing to refuse.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import Literal

from PIL import Image, UnidentifiedImageError

from sim.config import AvatarConfig
from sim.errors import Unprocessable

__all__ = ["ImageFormat", "PortraitInfo", "check_portrait"]

ImageFormat = Literal["png", "jpeg"]

_ACCEPTED: dict[str, tuple[ImageFormat, str]] = {
    "PNG": ("png", "image/png"),
    "JPEG": ("jpeg", "image/jpeg"),
}


@dataclass(frozen=True, slots=True)
class PortraitInfo:
    """What the check learned about an accepted portrait."""

    format: ImageFormat
    media_type: str
    width: int
    height: int
    byte_size: int


def _refuse(reason: str) -> Unprocessable:
    return Unprocessable(
        "avatar.image_invalid", f"The image is not usable: {reason}.", param="image"
    )


def check_portrait(data: bytes, config: AvatarConfig) -> PortraitInfo:
    """Accept ``data`` as a portrait or raise ``Unprocessable('avatar.image_invalid')``."""
    if not data:
        raise _refuse("the file is empty")
    if len(data) > config.image_max_bytes:
        raise _refuse(f"the file is larger than {config.image_max_bytes} bytes")
    header = _open(data)
    accepted = _ACCEPTED.get(header.format or "")
    if accepted is None:
        kind = header.format or "unknown"
        raise _refuse(f"{kind} images are not accepted; upload a PNG or JPEG")
    width, height = header.size
    low, high = config.image_min_side_px, config.image_max_side_px
    if not (low <= width <= high and low <= height <= high):
        raise _refuse(f"it is {width}x{height} px; each side must be {low} to {high} px")
    _decode(data)
    image_format, media_type = accepted
    return PortraitInfo(
        format=image_format, media_type=media_type, width=width, height=height, byte_size=len(data)
    )


def _open(data: bytes) -> Image.Image:
    """Identify the image from its header only (no pixel data is decoded here)."""
    with warnings.catch_warnings():
        # Pillow warns, then errors, on images with a huge pixel count; either way it is too big.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            return Image.open(io.BytesIO(data))
        except UnidentifiedImageError:
            raise _refuse("it is not a PNG or JPEG image") from None
        except (Image.DecompressionBombWarning, Image.DecompressionBombError):
            raise _refuse("its dimensions are far too large") from None
        except Exception:  # a recognised format whose header breaks off or is damaged
            raise _refuse("the image data is corrupt or truncated") from None


def _decode(data: bytes) -> None:
    """Prove the whole file decodes: ``verify`` checks structure, a fresh ``load`` the pixels.

    Decoders raise a zoo of exception types on damaged input (``OSError``, ``SyntaxError``,
    ``ValueError``, ``struct.error``, ``EOFError``...), so any exception here means "corrupt".
    """
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
        # verify() leaves the image unusable, hence the second open.
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except Exception:
        raise _refuse("the image data is corrupt or truncated") from None
