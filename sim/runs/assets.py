"""Assets: stored multimodal inputs and outputs (RES-ASSET-1, EP-ASSET-1, GAP-ASSET-1).

Every asset belongs to one organization and has a ``scope``: ``library`` (uploaded by the
customer), ``run_input`` (an inline input of a run, stored by the run) or ``run_output`` (made by
a run). ``owner_run_id`` records which run an input/output asset belongs to, so a run's deletion
purges exactly what the run created. A purged asset stays listable with ``status: deleted``; its
content is gone (404 ``asset.deleted``).
"""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from typing import Any, Literal

from PIL import Image

from sim.accounts import Caller
from sim.clock import Clock
from sim.errors import NotFound, Unprocessable
from sim.journal import discard
from sim.kernel import Kernel
from sim.pagination import paginate
from sim.runs.content import Content, StoredBytes

__all__ = [
    "MODALITIES",
    "Asset",
    "AssetScope",
    "AssetService",
    "AssetStatus",
    "Modality",
    "probe_audio",
    "probe_image",
]

Modality = Literal["text", "audio", "image", "video", "json"]
AssetScope = Literal["run_output", "run_input", "library"]
AssetStatus = Literal["ready", "deleted"]
MODALITIES: tuple[Modality, ...] = ("text", "audio", "image", "video", "json")


@dataclass(slots=True)
class Asset:
    id: str
    org_id: str
    modality: Modality
    scope: AssetScope
    media_type: str
    content: Content | None  # None once purged
    byte_size: int
    created_at: float
    owner_run_id: str | None = None
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    schema_uri: str | None = None
    deleted_at: float | None = None

    @property
    def status(self) -> AssetStatus:
        return "deleted" if self.deleted_at is not None else "ready"

    def download_url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/v1/assets/{self.id}/content"

    def to_resource(self, clock: Clock, base_url: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "asset",
            "byte_size": self.byte_size,
            "created_at": clock.timestamp(self.created_at),
            "deleted_at": clock.timestamp_or_none(self.deleted_at),
            "download_url": self.download_url(base_url),
            "duration_ms": self.duration_ms,
            "height": self.height,
            "width": self.width,
            "media_type": self.media_type,
            "modality": self.modality,
            "schema_uri": self.schema_uri,
            "scope": self.scope,
            "status": self.status,
        }


def probe_image(data: bytes) -> tuple[str, int, int] | None:
    """``(media_type, width, height)`` of a PNG or JPEG, identified by content; else ``None``."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            kind, size = image.format, image.size
    except Exception:
        return None
    media_type = {"PNG": "image/png", "JPEG": "image/jpeg"}.get(kind or "")
    return None if media_type is None else (media_type, size[0], size[1])


def probe_audio(data: bytes) -> int | None:
    """Duration in ms of a PCM WAV file, or ``None`` when ``data`` is not one."""
    try:
        with wave.open(io.BytesIO(data), "rb") as reader:
            frames, rate = reader.getnframes(), reader.getframerate()
    except (wave.Error, EOFError, ValueError):
        return None
    return None if rate <= 0 else frames * 1000 // rate


class AssetService:
    """Stores assets per organization and serves the asset endpoints."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._assets: dict[str, Asset] = {}
        self._by_org: dict[str, list[Asset]] = {}  # oldest first

    def release(self) -> None:
        """Forget every asset and its content (the platform is handed over: ``Platform``)."""
        self._assets, self._by_org = {}, {}

    # -- storage (called by runs and scenarios) ------------------------------------------------

    def store(
        self,
        org_id: str,
        *,
        modality: Modality,
        scope: AssetScope,
        media_type: str,
        content: Content,
        owner_run_id: str | None = None,
        width: int | None = None,
        height: int | None = None,
        duration_ms: int | None = None,
        schema_uri: str | None = None,
    ) -> Asset:
        asset = Asset(
            id=self._kernel.ids.new("asset"),
            org_id=org_id,
            modality=modality,
            scope=scope,
            media_type=media_type,
            content=content,
            byte_size=content.byte_size,
            created_at=self._kernel.clock.now,
            owner_run_id=owner_run_id,
            width=width,
            height=height,
            duration_ms=duration_ms,
            schema_uri=schema_uri,
        )
        # Stored inside an operation that then fails (a run create's inputs): gone with it.
        journal = self._kernel.journal
        journal.on_undo(lambda: self._assets.pop(asset.id, None))
        self._assets[asset.id] = asset
        org_assets = self._by_org.setdefault(org_id, [])
        journal.on_undo(lambda: discard(org_assets, asset))
        org_assets.append(asset)
        return asset

    def create_library_asset(
        self, org_id: str, data: bytes, media_type: str, modality: str
    ) -> Asset:
        """A customer upload (scenarios, run inputs by id). Images and WAV audio are probed for
        their dimensions/duration and refused when they are not what they claim to be."""
        if modality not in MODALITIES:
            raise Unprocessable(
                "validation.enum", f"Unknown modality {modality!r}.", param="modality"
            )
        width = height = duration_ms = None
        if modality == "image":
            probed = probe_image(data)
            if probed is None:
                raise Unprocessable("validation.format", "Not a PNG or JPEG image.", param="data")
            media_type, width, height = probed
        elif modality == "audio":
            duration_ms = probe_audio(data)
            if duration_ms is None:
                raise Unprocessable("validation.format", "Not a WAV file.", param="data")
        return self.store(
            org_id,
            modality=_as_modality(modality),
            scope="library",
            media_type=media_type,
            content=StoredBytes(data),
            width=width,
            height=height,
            duration_ms=duration_ms,
        )

    def get(self, org_id: str, asset_id: str) -> Asset:
        """The organization's asset; another organization's is not found (GAP-AUTH-3)."""
        asset = self._assets.get(asset_id)
        if asset is None or asset.org_id != org_id:
            raise NotFound("asset.not_found", f"No asset {asset_id}.")
        return asset

    def purge(self, asset: Asset) -> None:
        """Irreversibly drop the content; the record stays listable as ``deleted``."""
        if asset.deleted_at is None:
            asset.deleted_at = self._kernel.clock.now
            asset.content = None

    def assets(self) -> list[Asset]:
        """Every asset, oldest first (records for collectors)."""
        return list(self._assets.values())

    # -- endpoints ----------------------------------------------------------------------------

    def list(self, caller: Caller, *, limit: int, starting_after: str | None) -> dict[str, Any]:
        caller.require("runs:read")
        clock, base_url = self._kernel.clock, self._kernel.config.public_base_url
        return paginate(
            self._by_org.get(caller.org_id, [])[::-1],
            limit=limit,
            starting_after=starting_after,
            limits=self._kernel.config.limits,
            render=lambda a: a.to_resource(clock, base_url),
        )

    def content(self, caller: Caller, asset_id: str) -> tuple[bytes, str]:
        caller.require("runs:read")
        asset = self.get(caller.org_id, asset_id)
        if asset.content is None:
            raise NotFound("asset.deleted", f"The content of {asset_id} has been deleted.")
        return asset.content.render(), asset.media_type


def _as_modality(value: str) -> Modality:
    for modality in MODALITIES:
        if modality == value:
            return modality
    raise ValueError(value)  # pragma: no cover - checked by the caller
