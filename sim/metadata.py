"""Customer metadata on sessions and runs: reserved keys and size (EP-SESS-3, GAP-ERR-1).

``metadata`` is free-form JSON the customer owns, at most ``metadata_max_bytes`` serialised
(compact UTF-8 JSON). Keys starting with the reserved prefix (``_avatar.``) belong to the service:
only ``_avatar.debug_record`` (a boolean) is accepted, any other is refused with the seed's 400
``metadata.reserved_key``, which wins over any 422 of the same body, so callers check
``reserved_key`` first and ``check_metadata`` for the rest. Both session and run creates use this
one definition, as the spec's one ``Metadata`` schema says.
"""

from __future__ import annotations

import json
from typing import Any

from sim.config import LimitsConfig
from sim.errors import InvalidRequest, Unprocessable

__all__ = ["check_metadata", "reserved_key"]


def reserved_key(metadata: Any, limits: LimitsConfig) -> None:
    """400 ``metadata.reserved_key`` for the first (sorted) reserved key that is not allowed."""
    if not isinstance(metadata, dict):
        return
    prefix = limits.reserved_metadata_prefix
    for key in sorted(metadata):
        if key.startswith(prefix) and key != limits.debug_record_metadata_key:
            raise InvalidRequest(
                "metadata.reserved_key",
                f"Metadata keys starting with `{prefix}` are reserved; `{key}` is not allowed.",
                param=f"metadata.{key}",
            )


def check_metadata(metadata: Any, limits: LimitsConfig) -> dict[str, Any]:
    """The metadata object, or the 422 for its type, its one allowed reserved key, its size."""
    if not isinstance(metadata, dict):
        raise Unprocessable("validation.type", "`metadata` must be an object.", param="metadata")
    key = limits.debug_record_metadata_key
    if key in metadata and not isinstance(metadata[key], bool):
        raise Unprocessable(
            "validation.type", f"`metadata.{key}` must be a boolean.", param=f"metadata.{key}"
        )
    size = len(json.dumps(metadata, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > limits.metadata_max_bytes:
        raise Unprocessable(
            "metadata.too_large",
            f"`metadata` is {size} bytes serialized; the limit is {limits.metadata_max_bytes}.",
            param="metadata",
        )
    return metadata
