"""Prefixed, time-ordered ids: ``sess_01J…``, ``run_…``, ``req_…``.

The time part of each ULID is the simulated time, and the random part comes from the seeded
``ids`` stream, so the same seed gives the same ids. API keys and secrets are base62 strings drawn
from the same stream.
"""

from __future__ import annotations

import random
import string

from ulid import ULID

from sim.clock import Clock

__all__ = ["PREFIXES", "IdFactory"]

#: Every id prefix the service hands out, by resource.
PREFIXES: dict[str, str] = {
    "session": "sess_",
    "avatar": "av_",
    "run": "run_",
    "asset": "asset_",
    "request": "req_",
    "event": "evt_",
    "run_deletion": "rdel_",
    "organization": "org_",
    "embed": "emb_",
    "webhook_endpoint": "we_",
    "delivery": "whd_",
    "ledger_entry": "le_",
    "message": "msg_",
}

_BASE62 = string.digits + string.ascii_letters


class IdFactory:
    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self._clock = clock
        self._rng = rng

    def ulid(self) -> str:
        ms = self._clock.epoch_ms()
        randomness = self._rng.getrandbits(80)
        return str(ULID.from_bytes(ms.to_bytes(6, "big") + randomness.to_bytes(10, "big")))

    def new(self, kind: str) -> str:
        """A fresh id for resource ``kind`` (a key of ``PREFIXES``)."""
        return PREFIXES[kind] + self.ulid()

    def token(self, prefix: str, length: int = 32) -> str:
        """A random base62 secret such as an API key (``sk_live_``) or webhook secret."""
        return prefix + "".join(self._rng.choice(_BASE62) for _ in range(length))
