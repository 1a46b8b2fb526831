"""Deterministic media content for assets: PNG, WAV, an MP4-like container, text and JSON.

Clients download run outputs and expect to open them, so every generator writes a real,
well-formed file (all in memory; nothing touches the file system). Content is a pure function of
its parameters and a seed drawn from the ``runs.content`` stream, so the same scenario seed gives
byte-identical downloads.

Large media (audio, video) is kept as a *recipe* (``WavTone``, ``Mp4Clip``) whose size is known
by formula and whose bytes are rendered only when downloaded: a long simulation with thousands of
runs holds kilobytes, not gigabytes.
"""

from __future__ import annotations

import io
import json
import math
import random
import struct
import wave
import zlib
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Content",
    "Mp4Clip",
    "PngImage",
    "StoredBytes",
    "WavTone",
    "json_bytes",
    "mp4_boxes",
    "png",
    "text_bytes",
]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_WAV_HEADER_BYTES = 44
_MP4_BYTES_PER_SECOND = 2048  # payload of the mock mdat box per second of video
_MP4_BRANDS = (b"isom", b"iso2", b"mp41")


def _png_chunk(tag: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(tag + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + tag + payload + struct.pack(">I", crc)


def png(width: int, height: int, seed: int) -> bytes:
    """An 8-bit RGB PNG: a gradient whose colours depend on ``seed``."""
    if width < 1 or height < 1:
        raise ValueError("a PNG needs at least one pixel")
    rng = random.Random(seed)
    red, green, blue = rng.randrange(256), rng.randrange(256), rng.randrange(256)
    # Red runs along x, green along y, blue along the diagonal: built by slice assignment, so a
    # 512 x 512 image costs milliseconds, not a Python loop per pixel.
    reds = bytes((red + 255 * x // width) & 0xFF for x in range(width))
    blues = bytes((blue + i) & 0xFF for i in range(width + height))
    rows = bytearray()
    row = bytearray(3 * width)
    row[0::3] = reds
    for y in range(height):
        row[1::3] = bytes(((green + 255 * y // height) & 0xFF,)) * width
        row[2::3] = blues[y : y + width]
        rows.append(0)  # filter type: none
        rows += row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        _PNG_SIGNATURE
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(bytes(rows), 6))
        + _png_chunk(b"IEND", b"")
    )


def text_bytes(text: str) -> bytes:
    return text.encode("utf-8")


def json_bytes(value: Any) -> bytes:
    """Canonical JSON (sorted keys, compact), so equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def mp4_boxes(data: bytes) -> list[tuple[bytes, int]]:
    """The top-level ``(type, size)`` boxes of an ISO-BMFF byte string; ValueError if broken."""
    boxes: list[tuple[bytes, int]] = []
    offset = 0
    while offset < len(data):
        if offset + 8 > len(data):
            raise ValueError("truncated box header")
        size, kind = struct.unpack(">I4s", data[offset : offset + 8])
        if size < 8 or offset + size > len(data):
            raise ValueError(f"bad box size {size} at {offset}")
        boxes.append((kind, size))
        offset += size
    return boxes


@dataclass(frozen=True, slots=True)
class StoredBytes:
    """Content held as bytes: uploads, inline run inputs, small generated files."""

    data: bytes

    @property
    def byte_size(self) -> int:
        return len(self.data)

    def render(self) -> bytes:
        return self.data


@dataclass(frozen=True, slots=True)
class PngImage:
    """A generated image kept as its recipe (``png`` of the same parameters on download)."""

    width: int
    height: int
    seed: int

    @property
    def byte_size(self) -> int:
        # Compressed size is only known by compressing; callers read it once, at store time.
        return len(self.render())

    def render(self) -> bytes:
        return png(self.width, self.height, self.seed)


@dataclass(frozen=True, slots=True)
class WavTone:
    """16-bit mono PCM: a seed-chosen tone of ``duration_ms``, rendered on demand."""

    duration_ms: int
    sample_rate: int
    seed: int

    @property
    def frames(self) -> int:
        return self.duration_ms * self.sample_rate // 1000

    @property
    def byte_size(self) -> int:
        return _WAV_HEADER_BYTES + 2 * self.frames

    def render(self) -> bytes:
        # One exact period repeated: fast, and the tone is a pure function of the seed.
        period = max(2, self.sample_rate // (200 + random.Random(self.seed).randrange(600)))
        cycle = struct.pack(
            f"<{period}h",
            *(round(8000 * math.sin(2 * math.pi * i / period)) for i in range(period)),
        )
        repeats = self.frames // period + 1
        pcm = (cycle * repeats)[: 2 * self.frames]
        out = io.BytesIO()
        with wave.open(out, "wb") as writer:
            writer.setnchannels(1)
            writer.setsampwidth(2)
            writer.setframerate(self.sample_rate)
            writer.writeframes(pcm)
        return out.getvalue()


@dataclass(frozen=True, slots=True)
class Mp4Clip:
    """An MP4-like container: ``ftyp`` then ``mdat`` with seeded payload; not decodable video,
    but a well-formed box structure any ISO-BMFF parser walks."""

    duration_ms: int
    width: int
    height: int
    seed: int

    @property
    def _payload_size(self) -> int:
        return max(1, math.ceil(self.duration_ms * _MP4_BYTES_PER_SECOND / 1000))

    @property
    def byte_size(self) -> int:
        return (16 + 4 * len(_MP4_BRANDS)) + 8 + self._payload_size

    def render(self) -> bytes:
        ftyp_payload = b"isom" + struct.pack(">I", 512) + b"".join(_MP4_BRANDS)
        ftyp = struct.pack(">I4s", 8 + len(ftyp_payload), b"ftyp") + ftyp_payload
        payload = random.Random(self.seed).randbytes(self._payload_size)
        mdat = struct.pack(">I4s", 8 + len(payload), b"mdat") + payload
        return ftyp + mdat


Content = StoredBytes | PngImage | WavTone | Mp4Clip
