"""Reading a run create body (GAP-RUN-3): the envelope, the typed ``input``, media references.

The body is ``{input, operation?, external_id?, metadata?}``; ``input`` is validated by the
operation's pydantic model (the same one that publishes ``request_schemas``), and pydantic's
error kinds map onto the stable ``validation.*`` codes of GAP-ERR-1 with ``param`` as a dot-path
under ``input``. Media fields hold either an ``asset_`` id of the organization or base64 content;
both are checked here so a run never starts on an input it cannot read.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from sim.config import SimConfig
from sim.errors import InvalidRequest, NotFound, Unprocessable
from sim.metadata import check_metadata, reserved_key
from sim.runs.assets import Asset, AssetService, Modality, probe_audio, probe_image
from sim.runs.catalog import ModelSpec, OperationSpec

__all__ = ["BODY_FIELDS", "MediaInput", "RunRequest", "parse_body", "resolve_media"]

BODY_FIELDS = frozenset({"input", "operation", "external_id", "metadata"})

_TYPE_CODES = {
    "missing": "validation.required",
    "extra_forbidden": "validation.unknown_field",
    "literal_error": "validation.enum",
    "enum": "validation.enum",
    "string_too_short": "validation.range",
    "string_too_long": "validation.range",
    "greater_than": "validation.range",
    "greater_than_equal": "validation.range",
    "less_than": "validation.range",
    "less_than_equal": "validation.range",
    "too_short": "validation.range",
    "too_long": "validation.range",
}


@dataclass(frozen=True, slots=True)
class RunRequest:
    operation: OperationSpec
    input: BaseModel
    external_id: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MediaInput:
    """One media field of ``input``: an existing asset, or inline bytes to store."""

    param: str
    modality: Modality
    media_type: str
    duration_ms: int | None = None
    width: int | None = None
    height: int | None = None
    asset: Asset | None = None  # the referenced asset (not owned by the run)
    inline: bytes | None = None  # content to store as a run_input asset


def _pydantic_error(error: ValidationError) -> Unprocessable:
    first = error.errors()[0]
    loc = ".".join(str(part) for part in first["loc"])
    kind = str(first["type"])
    code = _TYPE_CODES.get(
        kind, "validation.type" if kind.endswith("_type") else "validation.format"
    )
    return Unprocessable(code, f"input.{loc}: {first['msg']}", param=f"input.{loc}")


def parse_body(spec: ModelSpec, body: Any, config: SimConfig) -> RunRequest:
    """The run create body, or the first fault in a fixed order: no body, not an object, a
    reserved metadata key (the seed's 400 wins, as for sessions), unknown fields (sorted), then
    ``operation``, ``input``, ``external_id`` and ``metadata``. It refuses at least what the
    spec's ``CreateRunRequest`` refuses, so both doors give this module's answer (SIM-7)."""
    if body is None:
        raise Unprocessable("validation.required", "A request body is required.")
    if not isinstance(body, dict):
        raise InvalidRequest("body.not_object", "The request body must be a JSON object.")
    reserved_key(body.get("metadata"), config.limits)
    for name in sorted(body):
        if name not in BODY_FIELDS:
            raise Unprocessable(
                "validation.unknown_field", f"Unknown field {name!r}.", param=str(name)
            )
    operation = spec.default_operation
    if "operation" in body:
        name = body["operation"]
        if not isinstance(name, str):
            raise Unprocessable("validation.type", "operation must be a string.", param="operation")
        found = spec.operation(name)
        if found is None:
            allowed = ", ".join(op.name for op in spec.operations)
            raise Unprocessable(
                "validation.enum", f"operation must be one of: {allowed}.", param="operation"
            )
        operation = found
    if "input" not in body:
        raise Unprocessable("validation.required", "input is required.", param="input")
    if not isinstance(body["input"], dict):
        raise Unprocessable("validation.type", "input must be an object.", param="input")
    try:
        parsed = operation.input_model.model_validate(body["input"], strict=True)
    except ValidationError as error:
        raise _pydantic_error(error) from None
    external_id: str | None = None
    if "external_id" in body:
        external_id = body["external_id"]
        if not isinstance(external_id, str):
            raise Unprocessable(
                "validation.type", "external_id must be a string.", param="external_id"
            )
        maximum = config.runs.external_id_max_length
        if not 1 <= len(external_id) <= maximum:
            raise Unprocessable(
                "validation.range",
                f"external_id is 1 to {maximum} characters.",
                param="external_id",
            )
    metadata = check_metadata(body["metadata"], config.limits) if "metadata" in body else {}
    return RunRequest(
        operation=operation, input=parsed, external_id=external_id, metadata=dict(metadata)
    )


def resolve_media(
    assets: AssetService, org_id: str, param: str, value: str, modality: Modality
) -> MediaInput:
    """Check one media field: an ``asset_`` id of the organization of the right modality, or
    base64 content that really is an image (PNG/JPEG) or a WAV file."""
    if value.startswith("asset_"):
        try:
            asset = assets.get(org_id, value)
        except NotFound:
            raise NotFound("asset.not_found", f"No asset {value}.", param=param) from None
        if asset.content is None:
            raise NotFound("asset.deleted", f"The content of {value} was deleted.", param=param)
        if asset.modality != modality:
            raise Unprocessable(
                "validation.format",
                f"{value} is a {asset.modality} asset; {modality} is needed.",
                param=param,
            )
        return MediaInput(
            param=param,
            modality=modality,
            media_type=asset.media_type,
            duration_ms=asset.duration_ms,
            width=asset.width,
            height=asset.height,
            asset=asset,
        )
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise Unprocessable(
            "validation.format", f"{param} is neither an asset_ id nor base64.", param=param
        ) from None
    if modality == "image":
        probed = probe_image(data)
        if probed is None:
            raise Unprocessable(
                "validation.format", f"{param} is not a PNG or JPEG image.", param=param
            )
        media_type, width, height = probed
        return MediaInput(
            param=param,
            modality=modality,
            media_type=media_type,
            width=width,
            height=height,
            inline=data,
        )
    duration_ms = probe_audio(data)
    if duration_ms is None or duration_ms <= 0:
        raise Unprocessable(
            "validation.format", f"{param} is not a non-empty WAV file.", param=param
        )
    return MediaInput(
        param=param, modality=modality, media_type="audio/wav", duration_ms=duration_ms, inline=data
    )
