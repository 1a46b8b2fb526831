"""The avatar record and its rendering in the contract's shape (RES-AV-1, RES-AV-2, GAP-AV-1).

An ``Avatar`` is a flat immutable record: a status change makes a new record, so collectors and
tests can keep the ones they saw. ``to_resource`` renders the JSON body the API answers. Optional
fields appear only when they carry a value: ``voice``, ``instructions`` and ``voice_instructions``
when configured, ``failure_reason`` only while the avatar is ``failed``; ``from_photo_upload`` is
always present (it is a plain yes/no).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sim.avatars.images import PortraitInfo
from sim.avatars.lifecycle import AvatarStatus
from sim.clock import Clock

__all__ = ["Avatar", "RuntimeType"]

RuntimeType = Literal["realtime", "mock"]


@dataclass(frozen=True, slots=True)
class Avatar:
    id: str
    name: str
    status: AvatarStatus
    is_demo: bool
    runtime_type: RuntimeType
    created_at: float  # simulated seconds; stock avatars sit at the epoch (0.0)
    org_id: str | None = None  # None for the platform's stock avatars
    voice: str | None = None
    instructions: str | None = None
    voice_instructions: str | None = None
    failure_reason: str | None = None
    from_photo_upload: bool = False
    portrait: PortraitInfo | None = None  # what the upload check learned
    upload_filename: str | None = None
    upload_content_type: str | None = None  # as declared by the client; not trusted
    completed_at: float | None = None  # when fitting ended (ready or failed)

    @property
    def usable(self) -> bool:
        return self.status == "ready"

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": "avatar",
            "name": self.name,
            "status": self.status,
            "is_demo": self.is_demo,
            "runtime_type": self.runtime_type,
            "created_at": clock.timestamp(self.created_at),
        }
        if self.voice is not None:
            body["voice"] = self.voice
        if self.instructions is not None:
            body["instructions"] = self.instructions
        if self.voice_instructions is not None:
            body["voice_instructions"] = self.voice_instructions
        if self.status == "failed" and self.failure_reason is not None:
            body["failure_reason"] = self.failure_reason
        body["from_photo_upload"] = self.from_photo_upload
        return body
