"""What each mock operation consumes and produces: billable units and typed outputs.

The mock models are deterministic functions of their input, so the units a run will use are
known at create time: that estimate is what the reservation covers (GAP-BILL-4), and the units
measured on the real output are never more (durations are rounded down), so a settlement never
exceeds its reservation.

Units per pricing unit: ``character`` = characters generated; ``second`` = seconds of audio or
video produced (speech: text length / ``speech_characters_per_second``; portrait video: the
length of the driving audio); ``run`` = 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sim.config import SimConfig
from sim.kernel import Kernel
from sim.runs.assets import Asset, AssetService, Modality
from sim.runs.catalog import EchoTextInput, ModelSpec, PortraitVideoInput, SpeechInput
from sim.runs.content import Content, Mp4Clip, PngImage, StoredBytes, WavTone, json_bytes
from sim.runs.inputs import MediaInput
from sim.runs.records import FileObject, OutputItem, Run

__all__ = ["SUMMARY_SCHEMA_URI", "Produced", "credits_for", "estimate_units", "produce"]

SUMMARY_SCHEMA_URI = "urn:avatar-sim:schema:portrait-video.summary:v1"

_EXTENSIONS = {
    "audio/wav": "wav",
    "video/mp4": "mp4",
    "image/png": "png",
    "application/json": "json",
    "text/plain": "txt",
}


def _speech_ms(text: str, config: SimConfig) -> int:
    return math.floor(len(text) * 1000 / config.runs.speech_characters_per_second)


def _echo(request: EchoTextInput) -> str:
    return (
        request.prompt
        if request.max_characters is None
        else (request.prompt[: request.max_characters])
    )


def estimate_units(
    spec: ModelSpec, request: BaseModel, media: dict[str, MediaInput], config: SimConfig
) -> float:
    """The billable units a run of ``request`` will use (see the module docstring)."""
    if spec.pricing_unit == "run":
        return 1.0
    if isinstance(request, EchoTextInput):
        return float(len(_echo(request)))
    if isinstance(request, SpeechInput):
        return _speech_ms(request.text, config) / 1000
    if isinstance(request, PortraitVideoInput):
        return (media["input.audio"].duration_ms or 0) / 1000
    raise TypeError(f"no unit rule for {type(request).__name__}")  # pragma: no cover


def credits_for(units: float, credits_per_unit: float) -> int:
    """Whole credits, rounded up (rounding guards float noise such as 0.1 * 3)."""
    return math.ceil(round(units * credits_per_unit, 6))


@dataclass(slots=True)
class Produced:
    outputs: list[OutputItem] = field(default_factory=list)
    files: dict[str, FileObject] = field(default_factory=dict)
    units: float = 0.0


class _Writer:
    def __init__(self, kernel: Kernel, assets: AssetService, run: Run) -> None:
        self._kernel = kernel
        self._assets = assets
        self._run = run
        self._rng = kernel.streams.stream("runs.content")
        self.produced = Produced()

    def seed(self) -> int:
        return self._rng.getrandbits(32)

    def _part(self) -> str:
        return f"part_{len(self.produced.outputs) + 1}"

    def text(self, text: str) -> None:
        self.produced.outputs.append(
            OutputItem(
                modality="text", role="primary", type="text", part_id=self._part(), text=text
            )
        )

    def file(self, modality: Modality, role: str, media_type: str, content: Content) -> Asset:
        """Store a generated file as a ``run_output`` asset and list it among the outputs; the
        asset's width, height and duration are those its content was generated with."""
        part = self._part()
        asset = self._assets.store(
            self._run.org_id,
            modality=modality,
            scope="run_output",
            media_type=media_type,
            content=content,
            owner_run_id=self._run.id,
            width=getattr(content, "width", None),
            height=getattr(content, "height", None),
            duration_ms=getattr(content, "duration_ms", None),
        )
        self._run.owned_asset_ids.append(asset.id)
        file = FileObject(
            content_type=media_type,
            file_size=asset.byte_size,
            file_name=f"{self._run.id}_{part}.{_EXTENSIONS[media_type]}",
            url=asset.download_url(self._kernel.config.public_base_url),
        )
        self.produced.outputs.append(
            OutputItem(
                modality=modality,
                role=role,
                type="file",
                part_id=part,
                asset_id=asset.id,
                file=file,
            )
        )
        if role == "primary" or modality not in self.produced.files:
            self.produced.files.setdefault(modality, file)
        return asset

    def data(self, value: dict[str, Any], asset: Asset | None = None) -> None:
        self.produced.outputs.append(
            OutputItem(
                modality="json",
                role="auxiliary",
                type="data",
                part_id=self._part(),
                data=value,
                asset_id=None if asset is None else asset.id,
            )
        )


def produce(
    kernel: Kernel,
    assets: AssetService,
    run: Run,
    request: BaseModel,
    media: dict[str, MediaInput],
) -> Produced:
    """Generate the outputs of a finished run, storing media outputs as ``run_output`` assets."""
    config = kernel.config
    writer = _Writer(kernel, assets, run)
    if isinstance(request, EchoTextInput):
        text = _echo(request)
        writer.text(text)
        writer.data({"characters": len(text), "words": len(text.split())})
        writer.produced.units = float(len(text))
    elif isinstance(request, SpeechInput):
        duration_ms = _speech_ms(request.text, config)
        sample_rate = config.runs.audio_sample_rate
        writer.file(
            "audio",
            "primary",
            "audio/wav",
            WavTone(duration_ms=duration_ms, sample_rate=sample_rate, seed=writer.seed()),
        )
        writer.produced.units = duration_ms / 1000
    elif isinstance(request, PortraitVideoInput):
        duration_ms = media["input.audio"].duration_ms or 0
        width, height = (int(side) for side in request.resolution.split("x"))
        writer.file(
            "video",
            "primary",
            "video/mp4",
            Mp4Clip(duration_ms=duration_ms, width=width, height=height, seed=writer.seed()),
        )
        writer.file(
            "image",
            "auxiliary",
            "image/png",
            PngImage(width=width, height=height, seed=writer.seed()),
        )
        frames = duration_ms * config.sessions.frames_per_second // 1000
        summary = {"duration_ms": duration_ms, "width": width, "height": height, "frames": frames}
        summary_asset = assets.store(
            run.org_id,
            modality="json",
            scope="run_output",
            media_type="application/json",
            content=StoredBytes(json_bytes(summary)),
            owner_run_id=run.id,
            schema_uri=SUMMARY_SCHEMA_URI,
        )
        run.owned_asset_ids.append(summary_asset.id)
        writer.data(summary, summary_asset)
        writer.produced.units = duration_ms / 1000
    else:  # pragma: no cover - every available operation has a branch
        raise TypeError(f"no producer for {type(request).__name__}")
    return writer.produced
