"""Assets: the files a media run produces, their listing and their content.

The bytes are real and tiny (a second of silent WAV, a 64 px PNG, a minimal MP4 box), so a
client can check that ``byte_size`` and ``media_type`` match what it downloads. Content is served
inline or through a signed, key-less URL, by reading; a purged asset has no content left.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import struct
import wave
from typing import TYPE_CHECKING, Any

from PIL import Image

from .auth import Principal
from .errors import ApiError, foreign, invalid, not_found
from .lists import page
from .store import Asset
from .validation import query_limit

if TYPE_CHECKING:
    from .service import Service

MAX_CURSOR = 40
SIGNED_URL_SECONDS = 3600.0


def wav_bytes() -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 8000)
    return buf.getvalue()


def png_bytes() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (40, 90, 160)).save(buf, "PNG")
    return buf.getvalue()


def mp4_bytes() -> bytes:
    ftyp = b"isom" + struct.pack(">I", 512) + b"isomiso2mp41"
    mdat = b"\x00" * 64
    return (
        struct.pack(">I", 8 + len(ftyp))
        + b"ftyp"
        + ftyp
        + struct.pack(">I", 8 + len(mdat))
        + b"mdat"
        + mdat
    )


MEDIA = {
    "audio": ("audio/wav", "speech.wav", wav_bytes, None, None, 1000),
    "image": ("image/png", "poster.png", png_bytes, 64, 64, None),
    "video": ("video/mp4", "clip.mp4", mp4_bytes, 64, 64, 1000),
}


class Assets:
    def __init__(self, service: Service) -> None:
        self.svc = service

    def produce(self, org_id: str, run_id: str, modality: str, t: float) -> Asset:
        media_type, file_name, make, width, height, duration = MEDIA[modality]
        asset = Asset(
            id=self.svc.store.new_id("asset", t),
            org_id=org_id,
            run_id=run_id,
            modality=modality,
            media_type=media_type,
            file_name=file_name,
            content=make(),
            created_at=t,
            width=width,
            height=height,
            duration_ms=duration,
        )
        self.svc.store.assets[asset.id] = asset
        return asset

    def byte_size(self, asset: Asset) -> int:
        if self.svc.faults.on("asset_byte_size_off"):
            return len(base64.b64encode(asset.content))
        return len(asset.content)

    def _signature(self, asset_id: str, expires: int) -> str:
        message = f"{asset_id}:{expires}".encode()
        return hmac.new(self.svc.secret, message, hashlib.sha256).hexdigest()[:32]

    def download_url(self, asset: Asset, base: str, t: float) -> str:
        if self.svc.reading.asset_content == "inline":
            return f"{base}/v1/assets/{asset.id}/content"
        return self.signed_url(asset, base, t)

    def signed_url(self, asset: Asset, base: str, t: float) -> str:
        expires = int(self.svc.clock.epoch(t + SIGNED_URL_SECONDS))
        sig = self._signature(asset.id, expires)
        return f"{base}/files/{asset.id}/{asset.file_name}?expires={expires}&sig={sig}"

    def content(self, asset: Asset, base: str, t: float) -> dict[str, Any]:
        """The body of ``GET /v1/assets/{id}/content``."""
        if self.svc.reading.asset_content == "inline":
            return {
                "object": "asset.content",
                "id": asset.id,
                "media_type": asset.media_type,
                "byte_size": self.byte_size(asset),
                "encoding": "base64",
                "data": base64.b64encode(asset.content).decode("ascii"),
            }
        return {
            "object": "asset_content",
            "asset_id": asset.id,
            "content_type": asset.media_type,
            "url": self.signed_url(asset, base, t),
            "expires_at": self.svc.clock.iso(t + SIGNED_URL_SECONDS),
        }

    def file_object(self, asset: Asset, base: str, t: float) -> dict[str, Any]:
        return {
            "content_type": asset.media_type,
            "file_name": asset.file_name,
            "file_size": self.byte_size(asset),
            "url": self.download_url(asset, base, t),
        }

    def render(self, asset: Asset, base: str, t: float) -> dict[str, Any]:
        reading = self.svc.reading

        def dim(value: int | None) -> int | None:
            return value if value is not None or reading.asset_inapplicable == "null" else 0

        clock = self.svc.clock
        return {
            "id": asset.id,
            "object": "asset",
            "byte_size": self.byte_size(asset),
            "created_at": clock.iso(asset.created_at),
            "deleted_at": clock.iso(asset.deleted_at) if asset.deleted_at is not None else None,
            "download_url": None
            if asset.deleted_at is not None
            else self.download_url(asset, base, t),
            "duration_ms": dim(asset.duration_ms),
            "height": dim(asset.height),
            "width": dim(asset.width),
            "media_type": asset.media_type,
            "modality": asset.modality,
            "schema_uri": f"urn:indie:asset:{asset.modality}:v1",
            "scope": reading.asset_scope_value,
            "status": "deleted" if asset.deleted_at is not None else "ready",
        }

    def get(self, asset_id: str, principal: Principal, *, any_org: bool = False) -> Asset:
        asset = self.svc.store.assets.get(asset_id)
        if asset is None:
            raise not_found("asset", asset_id)
        if asset.org_id != principal.org.id and not any_org:
            raise foreign(self.svc.reading, "asset", asset_id)
        return asset

    def list(
        self, principal: Principal, query: dict[str, str], base: str, t: float
    ) -> dict[str, Any]:
        reading, faults, store = self.svc.reading, self.svc.faults, self.svc.store
        limit = query_limit(
            query,
            reading,
            default=reading.default_page_size,
            lo=0 if faults.on("assets_limit_zero_accepted") else 1,
        )
        cursor = query.get("starting_after")
        if cursor is not None and len(cursor) > MAX_CURSOR:
            raise invalid(
                reading,
                "parameter.too_long",
                "The cursor is at most 40 characters.",
                "starting_after",
            )
        items = [
            a
            for a in store.assets.values()
            if a.org_id == principal.org.id
            and (reading.list_deleted_assets or a.deleted_at is None)
        ]
        items.sort(
            key=lambda a: (a.created_at, store.order_of(a.id)),
            reverse=reading.list_order == "newest_first",
        )
        return page(
            items,
            limit=limit,
            starting_after=cursor,
            id_of=lambda a: a.id,
            render=lambda a: self.render(a, base, t),
            reading=reading,
            faults=faults,
        )

    def check_signature(self, asset_id: str, expires: str, sig: str, t: float) -> Asset:
        asset = self.svc.store.assets.get(asset_id)
        try:
            expires_at = int(expires)
        except ValueError:
            expires_at = -1
        good = hmac.compare_digest(self._signature(asset_id, expires_at), sig or "")
        if asset is None or not good or self.svc.clock.epoch(t) > expires_at:
            raise ApiError(
                403, "download.invalid_signature", "The download link is invalid or expired."
            )
        if asset.deleted_at is not None:
            raise not_found("asset", asset_id)
        return asset
