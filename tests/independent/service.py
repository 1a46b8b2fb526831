"""The running service: one reading, one set of faults, one clock, and all the state.

Request handlers call :meth:`Service.tick` first, which fires every timer that fell due since
the last request; that is how timers work with no background thread and why a session's status
is right whenever it is read.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from .assets import Assets
from .avatars import Avatars
from .billing import Billing
from .catalog import MEDIA_MODEL, MODELS, RUN_JSON
from .clock import Clock
from .faults import FaultSet
from .idempotency import IdempotencyStore
from .limits import RateLimiter
from .readings import Reading
from .runs import Runs
from .sessions import Sessions
from .store import Store
from .timeline import Timeline


class Service:
    def __init__(self, reading: Reading, faults: FaultSet, clock: Clock, workers: int = 8) -> None:
        if workers < 1:
            raise ValueError("the worker pool needs at least one worker")
        self.reading = reading
        self.faults = faults
        self.clock = clock
        self.timeline = Timeline()
        self.store = Store(clock)
        self.secret = secrets.token_bytes(32)
        self.rate = RateLimiter(clock, reading, faults)
        self.idempotency = IdempotencyStore(reading)
        self.billing = Billing(self)
        self.sessions = Sessions(self, workers)
        self.avatars = Avatars(self)
        self.assets = Assets(self)
        self.runs = Runs(self)

    def tick(self) -> float:
        """Bring every timer up to the present and return the present (target seconds)."""
        now = self.clock.now()
        self.timeline.advance(now)
        return now

    def credentials(self, base_url: str) -> dict[str, Any]:
        store = self.store
        return {
            "base_url": base_url,
            "time_factor": self.clock.time_factor,
            "reading": self.reading.name,
            "faults": sorted(self.faults.names),
            "api_key": store.api_key.secret,
            "other_org_key": store.other_org_key.secret,
            "runs_read_key": store.runs_read_key.secret,
            "runs_write_key": store.runs_write_key.secret,
            "revoked_key": store.revoked_key.secret,
            "models": sorted(MODELS),
            "media_model": MEDIA_MODEL,
            "run_json": copy.deepcopy(RUN_JSON),
        }
