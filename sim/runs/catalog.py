"""The mock model catalog (RES-MODEL-1, EP-MODEL-1, GAP-MODEL-1).

Each operation's ``input`` is a pydantic model: it validates run bodies *and* produces the JSON
Schema published in ``request_schemas`` (``model_json_schema()``), so what the catalog promises
and what the service accepts are one source of truth. Prices and durations are per-model numbers
in ``config.runs.models``; a catalog entry without a config entry is listed as unavailable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sim.config import ModelConfig
from sim.runs.assets import Modality

__all__ = [
    "CATALOG",
    "CONTRACT_REVISION",
    "UNPRICED",
    "EchoTextInput",
    "ModelSpec",
    "OperationSpec",
    "PortraitVideoInput",
    "PricingUnit",
    "RetiredInput",
    "SpeechInput",
    "find_model",
]

#: The contract revision every catalog entry was built against.
CONTRACT_REVISION = "2026-01-01"

PricingUnit = Literal["run", "second", "character"]

#: ``pricing.pricing_version`` of an entry the configuration gives no price (it is unavailable).
UNPRICED = "unpriced"


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class EchoTextInput(_Input):
    """Text generation by the echo model: the output repeats the prompt."""

    prompt: str = Field(min_length=1, max_length=20_000, description="text to generate from")
    max_characters: int | None = Field(
        default=None, ge=1, le=20_000, description="truncate the generated text to this length"
    )


class SpeechInput(_Input):
    """Text to speech."""

    text: str = Field(min_length=1, max_length=5_000, description="text to speak")
    voice: Literal["alloy", "verse", "sage"] = Field(default="alloy", description="voice")


class PortraitVideoInput(_Input):
    """A talking portrait: an image animated by an audio track."""

    image: str = Field(
        min_length=1,
        description="an asset_ id of an image asset, or a base64-encoded PNG or JPEG",
    )
    audio: str = Field(
        min_length=1, description="an asset_ id of an audio asset, or a base64-encoded WAV"
    )
    resolution: Literal["256x256", "512x512"] = Field(default="256x256")


class RetiredInput(_Input):
    prompt: str = Field(min_length=1, max_length=1_000)


@dataclass(frozen=True, slots=True)
class OperationSpec:
    name: str
    description: str
    input_modalities: tuple[Modality, ...]
    output_modalities: tuple[Modality, ...]
    input_model: type[_Input]

    def request_schema(self) -> dict[str, Any]:
        return self.input_model.model_json_schema()

    def to_resource(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "input_modalities": list(self.input_modalities),
            "output_modalities": list(self.output_modalities),
        }


@dataclass(frozen=True, slots=True)
class ModelSpec:
    id: str
    display_name: str
    description: str
    family: str
    owner: str
    revision: str
    operations: tuple[OperationSpec, ...]
    pricing_unit: PricingUnit
    available: bool = True
    internal: bool = False
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    execution_modes: tuple[str, ...] = ("async",)
    execution_targets: tuple[str, ...] = ("cloud",)
    output_quality_descriptions: Mapping[str, str] = field(default_factory=dict)

    @property
    def default_operation(self) -> OperationSpec:
        return self.operations[0]

    def operation(self, name: str) -> OperationSpec | None:
        return next((op for op in self.operations if op.name == name), None)

    @property
    def input_modalities(self) -> list[str]:
        return sorted({m for op in self.operations for m in op.input_modalities})

    @property
    def output_modalities(self) -> list[str]:
        return sorted({m for op in self.operations for m in op.output_modalities})

    def to_resource(self, config: ModelConfig | None) -> dict[str, Any]:
        """The Model resource; pricing comes from ``config`` (``None``: listed as unavailable)."""
        return {
            "id": self.id,
            "object": "model",
            "available": self.available and config is not None,
            "contract_revision": CONTRACT_REVISION,
            "revision": self.revision,
            "description": self.description,
            "display_name": self.display_name,
            "family": self.family,
            "owner": self.owner,
            "execution_modes": list(self.execution_modes),
            "execution_targets": list(self.execution_targets),
            "input_modalities": self.input_modalities,
            "output_modalities": self.output_modalities,
            "operations": {op.name: op.to_resource() for op in self.operations},
            "pricing": {
                "pricing_version": UNPRICED if config is None else config.pricing_version,
                "unit": self.pricing_unit,
                "credits_per_unit": 0 if config is None else config.credits_per_unit,
            },
            "aliases": list(self.aliases),
            "tags": list(self.tags),
            "output_quality_descriptions": dict(self.output_quality_descriptions),
            "request_schemas": {op.name: op.request_schema() for op in self.operations},
        }


_SPEECH_OPERATION = OperationSpec(
    name="synthesize",
    description="Speak a text as a WAV file.",
    input_modalities=("text",),
    output_modalities=("audio",),
    input_model=SpeechInput,
)

CATALOG: tuple[ModelSpec, ...] = (
    ModelSpec(
        id="sim/echo-text",
        display_name="Echo Text",
        family="echo",
        owner="sim",
        revision="1.2.0",
        description="Deterministic text model: generates its prompt back, for wiring tests.",
        operations=(
            OperationSpec(
                name="generate",
                description="Generate text from a prompt.",
                input_modalities=("text",),
                output_modalities=("text", "json"),
                input_model=EchoTextInput,
            ),
        ),
        pricing_unit="character",
        aliases=("echo",),
        tags=("text", "mock"),
        output_quality_descriptions={"standard": "Exact echo of the prompt."},
    ),
    ModelSpec(
        id="sim/speech",
        display_name="Speech",
        family="speech",
        owner="sim",
        revision="2.0.1",
        description="Text to speech: a WAV tone as long as the text would take to say.",
        operations=(_SPEECH_OPERATION,),
        pricing_unit="second",
        aliases=("tts",),
        tags=("audio", "tts"),
        output_quality_descriptions={"standard": "16-bit mono PCM at the configured rate."},
    ),
    ModelSpec(
        id="sim/portrait-video",
        display_name="Portrait Video",
        family="portrait",
        owner="sim",
        revision="0.9.0",
        description="Animates a portrait image with an audio track into a talking-head video.",
        operations=(
            OperationSpec(
                name="animate",
                description="Animate a portrait with speech audio.",
                input_modalities=("image", "audio"),
                output_modalities=("video", "image", "json"),
                input_model=PortraitVideoInput,
            ),
        ),
        pricing_unit="second",
        tags=("video", "portrait"),
        output_quality_descriptions={
            "256x256": "Preview resolution.",
            "512x512": "Standard resolution.",
        },
    ),
    ModelSpec(
        id="sim/internal-speech",
        display_name="Platform Speech",
        family="speech",
        owner="sim",
        revision="2.0.1",
        description="The speech the platform buys for managed conversations; billed as such.",
        operations=(_SPEECH_OPERATION,),
        pricing_unit="second",
        internal=True,
        tags=("audio", "internal"),
    ),
    ModelSpec(
        id="sim/retired-model",
        display_name="Retired Model",
        family="echo",
        owner="sim",
        revision="0.1.0",
        description="A model kept in the catalog after retirement.",
        operations=(
            OperationSpec(
                name="generate",
                description="Generate text (no longer served).",
                input_modalities=("text",),
                output_modalities=("text",),
                input_model=RetiredInput,
            ),
        ),
        pricing_unit="run",
        available=False,
        tags=("text", "retired"),
    ),
)

_BY_ID = {spec.id: spec for spec in CATALOG}
_BY_ALIAS = {alias: spec for spec in CATALOG for alias in spec.aliases}


def find_model(model_id: str) -> ModelSpec | None:
    """The catalog entry named by id (aliases are listed, not routable: ids name the path)."""
    return _BY_ID.get(model_id)
