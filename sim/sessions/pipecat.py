"""Pipecat media sessions, domain side (EP-PIPE-1, RES-PIPE-1, GAP-PIPE-1).

A pipecat session is an ordinary session (billing surface ``pipecat``, transport
``{type: "pipecat"}``) plus short-lived WebSocket relay credentials for the media. The relay's
fixed properties are the simulator's documented choices; its secret comes from the seeded id
stream and expires ``relay_credential_ttl_seconds`` after issue, so the same seed issues the same
credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from sim.clock import Clock
from sim.config import SessionConfig
from sim.ids import IdFactory

__all__ = ["RELAY_BASE_URL", "RelayCredentials", "issue_relay"]

RELAY_BASE_URL: Final = "wss://relay.avatar-sim.invalid/v1/media/"
RELAY_PROTOCOL: Final = "pipecat-avatar.v1"
DECODED_VIDEO_FORMAT: Final = "rgb24"
VIDEO_ENCODING: Final = "h264"
_TOKEN_PREFIX: Final = "rly_"


@dataclass(frozen=True, slots=True)
class RelayCredentials:
    session_id: str
    token: str
    issued_at: float
    expires_at: float
    audio_sample_rate: int

    @property
    def media_url(self) -> str:
        return f"{RELAY_BASE_URL}{self.session_id}?token={self.token}"

    def valid_at(self, moment: float) -> bool:
        return self.issued_at <= moment < self.expires_at

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "type": "websocket",
            "media_url": self.media_url,
            "protocol": RELAY_PROTOCOL,
            "audio_sample_rate": self.audio_sample_rate,
            "decoded_video_format": DECODED_VIDEO_FORMAT,
            "video_encoding": VIDEO_ENCODING,
            "supports_audio_output": True,
            "expires_at": clock.timestamp(self.expires_at),
        }


def issue_relay(
    session_id: str, clock: Clock, ids: IdFactory, config: SessionConfig
) -> RelayCredentials:
    now = clock.now
    return RelayCredentials(
        session_id=session_id,
        token=ids.token(_TOKEN_PREFIX),
        issued_at=now,
        expires_at=now + config.relay_credential_ttl_seconds,
        audio_sample_rate=config.relay_audio_sample_rate,
    )
