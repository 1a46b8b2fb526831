"""The service's in-memory records and the two organizations it launches with.

Records keep time as target seconds (see :mod:`.clock`) and internal status names; rendering to
the API's field names and to each reading's vocabulary happens in the resource modules. Ids are
prefixed ULIDs minted from the target clock, so they sort by creation time like a real
deployment's.
"""

from __future__ import annotations

import itertools
import secrets
import string
from dataclasses import dataclass, field
from typing import Any

from ulid import ULID

from .clock import Clock

SCOPES = frozenset({"runs:read", "runs:write"})
SIGNUP_GRANT_CREDITS = 2_000  # $20 at one cent a credit
_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Plan:
    key: str
    name: str
    included_credits: int
    can_delete_runs: bool
    concurrent_sessions: int
    monthly_price_usd: int


PLANS: dict[str, Plan] = {
    p.key: p
    for p in (
        Plan("free", "Free", 0, False, 1, 0),
        Plan("starter", "Starter", 5_000, False, 2, 49),
        Plan("scale", "Scale", 50_000, False, 5, 499),
        Plan("enterprise", "Enterprise", 200_000, True, 5, 0),
    )
}


@dataclass
class Org:
    id: str
    name: str
    plan_key: str
    purchased_credits: int
    session_cap: int = 5  # tunable per organization by support, up to the ceiling of 20

    @property
    def plan(self) -> Plan:
        return PLANS[self.plan_key]


@dataclass
class ApiKey:
    id: str
    secret: str
    org_id: str
    scopes: frozenset[str] | None  # None: unrestricted
    revoked: bool = False
    environment: str = "production"

    @property
    def unrestricted(self) -> bool:
        return self.scopes is None


@dataclass
class Avatar:
    id: str
    org_id: str | None  # None: a platform stock avatar
    name: str
    status: str  # processing | ready | failed
    runtime_type: str
    created_at: float
    voice: str | None = None
    instructions: str | None = None
    voice_style: str | None = None
    failure_reason: str | None = None
    from_photo: bool = False
    image: bytes = b""

    @property
    def is_demo(self) -> bool:
        return self.org_id is None


@dataclass
class Session:
    id: str
    org_id: str
    key_id: str
    avatar_id: str
    status: str  # created | queued | starting | running | ending | ended | failed | canceled
    quality: str
    billing_surface: str
    transport: dict[str, Any]
    idle_timeout_seconds: int
    max_duration_seconds: int
    metadata: dict[str, Any]
    created_at: float
    observes_audio: bool
    eligible: bool = False  # placement delay elapsed
    placed_at: float | None = None
    started_at: float | None = None
    first_frame_at: float | None = None
    running_until: float | None = None  # when it stopped producing billable frames
    ended_at: float | None = None
    end_reason: str | None = None
    error: dict[str, str] | None = None
    billable_seconds: int | None = None  # final, once terminal
    timers: list[Any] = field(default_factory=list)

    @property
    def placed(self) -> bool:
        return self.placed_at is not None

    @property
    def terminal(self) -> bool:
        return self.status in ("ended", "failed", "canceled")


@dataclass
class RunEvent:
    sequence: int
    id: str
    kind: str  # queued | started | progress | output | succeeded | failed | canceled
    part_id: str | None
    data: dict[str, Any]
    created_at: float


@dataclass
class Asset:
    id: str
    org_id: str
    run_id: str
    modality: str
    media_type: str
    file_name: str
    content: bytes
    created_at: float
    width: int | None = None
    height: int | None = None
    duration_ms: int | None = None
    deleted_at: float | None = None


@dataclass
class Deletion:
    id: str
    run_id: str
    status: str  # queued | running | done
    requested_at: float
    started_at: float | None = None
    completed_at: float | None = None


@dataclass
class Run:
    id: str
    org_id: str
    key_id: str
    model: str
    operation: str
    status: str  # queued | running | succeeded | failed | canceled
    created_at: float
    external_id: str | None
    metadata: dict[str, Any]
    input: dict[str, Any]
    price: int
    progress: float = 0.0
    started_at: float | None = None
    completed_at: float | None = None
    charged: int = 0
    outputs: list[dict[str, Any]] = field(default_factory=list)
    asset_ids: list[str] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    error: dict[str, str] | None = None
    deleted_at: float | None = None
    deletion: Deletion | None = None
    timers: list[Any] = field(default_factory=list)

    @property
    def terminal(self) -> bool:
        return self.status in ("succeeded", "failed", "canceled")


@dataclass
class Charge:
    """One settled billing row. Rows are never removed (run deletion keeps them)."""

    id: str
    org_id: str
    at: float
    credits: int
    surface: str
    model: str | None = None
    operation: str | None = None
    session_id: str | None = None
    run_id: str | None = None
    quality: str | None = None
    billable_seconds: int = 0
    speech_mode: str | None = None


def _secret(n: int = 32) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(n))


class Store:
    """All records of one running service, plus the launch-time organizations and keys."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._order = itertools.count()
        self.orgs: dict[str, Org] = {}
        self.keys: dict[str, ApiKey] = {}  # by secret
        self.avatars: dict[str, Avatar] = {}
        self.sessions: dict[str, Session] = {}
        self.runs: dict[str, Run] = {}
        self.assets: dict[str, Asset] = {}
        self.charges: list[Charge] = []
        self.creation_order: dict[str, int] = {}
        self._seed()

    def new_id(self, prefix: str, t: float) -> str:
        """A prefixed ULID stamped with target time ``t``; ties keep creation order."""
        ident = f"{prefix}_{ULID.from_timestamp(self.clock.epoch(t))}"
        self.creation_order[ident] = next(self._order)
        return ident

    def order_of(self, ident: str) -> int:
        return self.creation_order.get(ident, -1)

    def _key(self, org: Org, scopes: frozenset[str] | None, revoked: bool = False) -> ApiKey:
        key = ApiKey(self.new_id("key", 0.0), f"sk_live_{_secret()}", org.id, scopes, revoked)
        self.keys[key.secret] = key
        return key

    def _seed(self) -> None:
        a = Org("org_" + _secret(12), "Organization A", "enterprise", 1_000_000)
        b = Org("org_" + _secret(12), "Organization B", "scale", 500_000)
        self.orgs = {a.id: a, b.id: b}
        self.org_a, self.org_b = a, b
        self.api_key = self._key(a, None)
        self.runs_read_key = self._key(a, frozenset({"runs:read"}))
        self.runs_write_key = self._key(a, frozenset({"runs:write"}))
        self.revoked_key = self._key(a, None, revoked=True)
        self.other_org_key = self._key(b, None)
        for ident, name, runtime, voice in (
            ("av_stock_maya", "Maya", "realtime", "alloy"),
            ("av_stock_theo", "Theo", "realtime", "verse"),
            ("av_stock_mock", "Mock Presenter", "mock", None),
        ):
            self.avatars[ident] = Avatar(ident, None, name, "ready", runtime, 0.0, voice=voice)
            self.creation_order[ident] = next(self._order)
