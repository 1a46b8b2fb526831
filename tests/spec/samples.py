"""Resource instances shaped as the seed's field tables describe them, shared by the tests of the
component schemas and of the contract profile."""

from __future__ import annotations

from typing import Any

TS = "2026-01-05T10:00:00.000Z"
ASSET = "asset_01KABCDEFGHJKMNPQRSTVWXYZ0"

#: An audio asset as the simulator writes it: the fields that do not apply are null (GAP-NULL-1).
ASSET_BODY: dict[str, Any] = {
    "id": ASSET,
    "object": "asset",
    "byte_size": 10,
    "created_at": TS,
    "deleted_at": None,
    "download_url": "http://127.0.0.1:8080/v1/assets/x/content",
    "duration_ms": 1500,
    "height": None,
    "width": None,
    "media_type": "audio/wav",
    "modality": "audio",
    "schema_uri": None,
    "scope": "run_output",
    "status": "ready",
}
