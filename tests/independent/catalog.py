"""The model catalog: one text-only model and one model with audio, image and video outputs.

Both accept the same request body (:data:`RUN_JSON` is an example of it), described as a JSON
Schema in each model's ``request_schemas`` under its operation name. Runs of the text model are
billed on the ``api`` surface; the media model's on ``video_generation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .readings import Reading

TEXT_MODEL = "indie/echo-text"
MEDIA_MODEL = "indie/talking-head"
PRICING_VERSION = "2025-06-01"
CONTRACT_REVISION = "2025-06-01"
RUN_JSON: dict[str, Any] = {"input": {"text": "Hello from the conformance tester."}}
MAX_TEXT = 2000
MAX_EXTERNAL_ID = 128


@dataclass(frozen=True)
class ModelSpec:
    id: str
    kind: str  # "text" | "media"
    display_name: str
    family: str
    description: str
    price: int  # credits per run
    surface: str
    outputs: tuple[str, ...]  # modalities, produced one second apart
    revision: str

    @property
    def output_modalities(self) -> list[str]:
        return list(dict.fromkeys(self.outputs))

    @property
    def duration(self) -> float:
        """Seconds from start to completion."""
        return float(len(self.outputs))


MODELS: dict[str, ModelSpec] = {
    m.id: m
    for m in (
        ModelSpec(
            TEXT_MODEL,
            "text",
            "Echo Text",
            "echo",
            "Returns the prompt, lightly rephrased. Text in, text out.",
            2,
            "api",
            ("text",),
            "r3",
        ),
        ModelSpec(
            MEDIA_MODEL,
            "media",
            "Talking Head",
            "avatar-video",
            "Speaks the prompt with a stock presenter: transcript, audio, poster image, video.",
            25,
            "video_generation",
            ("text", "audio", "image", "video"),
            "r7",
        ),
    )
}


def request_schema(operation: str) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["input"],
        "additionalProperties": False,
        "properties": {
            "input": {
                "type": "object",
                "required": ["text"],
                "additionalProperties": False,
                "properties": {"text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}},
            },
            "operation": {"type": "string", "enum": [operation]},
            "external_id": {"type": "string", "maxLength": MAX_EXTERNAL_ID},
            "metadata": {"type": "object"},
        },
    }


def operation_of(model: ModelSpec, reading: Reading) -> str:
    return reading.operation_names[model.kind]


def render_model(model: ModelSpec, reading: Reading, *, modes_as_string: bool) -> dict[str, Any]:
    operation = operation_of(model, reading)
    modes = ["async"]
    body: dict[str, Any] = {
        "id": model.id,
        "available": True,
        "contract_revision": CONTRACT_REVISION,
        "revision": model.revision,
        "description": model.description,
        "display_name": model.display_name,
        "family": model.family,
        "owner": model.id.split("/", 1)[0],
        "execution_modes": ",".join([*modes, "batch"]) if modes_as_string else modes,
        "execution_targets": ["cloud"],
        "input_modalities": ["text"],
        "output_modalities": model.output_modalities,
        "operations": {
            operation: {
                "description": model.description,
                "input_modalities": ["text"],
                "output_modalities": model.output_modalities,
            }
        },
        "pricing": {
            "unit": "run",
            "credits_per_run": model.price,
            "pricing_version": PRICING_VERSION,
        },
        "aliases": [model.id.split("/", 1)[1]],
        "tags": [model.kind],
        "request_schemas": {operation: request_schema(operation)},
    }
    if model.kind == "media":
        body["output_quality_descriptions"] = {"standard": "720p video, 24 kHz audio"}
    if reading.optional_object_field:
        body = {"object": "model", **body}
    return body
