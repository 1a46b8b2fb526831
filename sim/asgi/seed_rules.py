"""The seed's own 400s, which outrank any schema failure of the same body.

The spec's request schema for ``POST /v1/sessions`` is strict (only the ``livekit`` transport, no
unknown ``_avatar.*`` key), so a generator that trusts the schema never sends what the service
refuses. But the seed says those two refusals are 400 ``invalid_request``, not the 422 a schema
failure normally becomes (EP-SESS-2, EP-SESS-3, GAP-ERR-1). This module recognises them among the
schema failures of a body and returns the 400 instead; the domain raises the same errors for
callers of the Python API, so both doors agree.

Nothing here repeats a bound or an enum: which transport types are accepted is whatever the schema
accepts, and the reserved prefix and the one allowed reserved key come from the config.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.asgi.validation import Failure
from sim.config import SimConfig
from sim.errors import DomainError, InvalidRequest

__all__ = ["seed_refusal"]

_TRANSPORT_TYPE = ("transport", "type")


def seed_refusal(
    operation_id: str, body: Any, failures: Sequence[Failure], config: SimConfig
) -> DomainError | None:
    """The seed-named 400 hidden among ``failures``, if any."""
    if operation_id != "createSession" or not isinstance(body, dict) or not failures:
        return None
    transport = body.get("transport")
    if (
        isinstance(transport, dict)
        and isinstance(transport.get("type"), str)
        and any(f.path == _TRANSPORT_TYPE and f.code == "validation.enum" for f in failures)
    ):
        return InvalidRequest(
            "transport.unsupported",
            f"The transport type {transport['type']!r} is not available.",
            param="transport.type",
        )
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        limits = config.limits
        reserved = [
            str(key)
            for key in metadata
            if str(key).startswith(limits.reserved_metadata_prefix)
            and key != limits.debug_record_metadata_key
        ]
        if reserved:
            return InvalidRequest(
                "metadata.reserved_key",
                f"The metadata key {reserved[0]!r} is reserved.",
                param=f"metadata.{reserved[0]}",
            )
    return None
