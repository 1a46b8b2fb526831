"""``POST /v1/pipecat/sessions``: a session plus short-lived WebSocket relay credentials.

The spec names only ``avatar_id``; the other fields' names come from the reading. The relay is
never actually served (the mock worker needs no media), but its URL and token are well-formed.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from .auth import Principal
from .errors import invalid
from .sessions import QUALITIES
from .validation import enum_field, int_field, refuse_unknown, str_field

if TYPE_CHECKING:
    from .service import Service


def parse(svc: Service, body: dict[str, Any], principal: Principal) -> dict[str, Any]:
    reading, faults = svc.reading, svc.faults
    names = reading.pipecat_fields
    refuse_unknown(body, {"avatar_id", *names.values()}, reading)
    avatar_id = str_field(body, "avatar_id", reading, required=True, max_len=64)
    idle = int_field(body, names["idle"], 1, 600, 30, reading)
    requested_max = int_field(body, names["max"], 1, 3600, 600, reading)
    quality = enum_field(body, names["quality"], QUALITIES, reading.default_quality, reading)
    relay_name = names["relay"]
    relay_type = body.get(relay_name, "websocket")
    if faults.on("pipecat_relay_type_unchecked"):
        if not isinstance(relay_type, str):
            raise invalid(
                reading, "parameter.invalid_type", f"{relay_name} must be a string.", relay_name
            )
    else:
        enum_field(body, relay_name, ("websocket",), "websocket", reading)
    return {
        "avatar_id": avatar_id,
        "transport": {"type": "pipecat"},
        "worker_token": None,
        "observes_audio": reading.pipecat_idle_applies,
        "idle": idle,
        "max": svc.sessions.effective_max(requested_max, principal),
        "metadata": {},
        "quality": quality,
    }


def relay(svc: Service, host: str) -> dict[str, Any]:
    token = secrets.token_urlsafe(24)
    return {
        "type": "pipecat" if svc.faults.on("pipecat_relay_type_wrong") else "websocket",
        "media_url": f"wss://{host}/v1/pipecat/relay/{token}",
        "protocol": svc.reading.relay["protocol"],
        "audio_sample_rate": svc.reading.relay["audio_sample_rate"],
        "decoded_video_format": svc.reading.relay["decoded_video_format"],
        "video_encoding": svc.reading.relay["video_encoding"],
        "supports_audio_output": True,
    }
