"""What one conformance run shares between its scripts: the target, what the user supplied, its
clock, the run's model, and the sessions it created; how time passes and how sessions are read
and ended.

Why one object: every script that creates a session must send a body that any reading of the
seed accepts, pick an avatar the target lists, respect the create rate limit and the per-key
session cap in the same way, and end what it created. Time passes through one ``TargetClock``
(``harness.conformance.clock``): the simulator's admin clock, real waiting scaled by the target's
time factor (the default), or none at all (``--quick``). Every wait is bounded: by
``--max-wait`` for one wait, and by the budget of the script in progress (``deadline``, in wall
seconds); waits for the rate limit's pacing extend the budget rather than spend it.

The context is built in three layers, one concept each: this one (state, time, reading and
ending sessions), creating sessions (``context_creates``), and runs (``context``).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import CheckFailed, Incomplete, NotChecked
from harness.conformance.clock import AdminClock, RealClock, TargetClock
from harness.conformance.inputs import DEFAULT_TRANSPORT, QUALITIES, Inputs
from harness.conformance.model import NONCE, SeedModel, Verdict
from harness.conformance.pacing import KeyPacer
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange, Target
from harness.conformance.watch import TERMINAL, SessionWatch

__all__ = ["SETTLE_SECONDS", "ContextBase"]

T = TypeVar("T")

#: How long the run lets its ended sessions take to drain before it calls them stuck (target
#: seconds; the seed states no bound, the simulator drains within 5 s).
SETTLE_SECONDS = 90.0


class _Admin:
    """The admin requests ``AdminClock`` sends, through the run's target."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def read_clock(self) -> float:
        exchange = self.target.request("GET", "/_sim/clock", role="admin")
        return float(expect_status(exchange, what="GET /_sim/clock")["seconds"])

    def advance_clock(self, seconds: float) -> None:
        exchange = self.target.request(
            "POST", "/_sim/clock/advance", role="admin", json_body={"seconds": seconds}
        )
        expect_status(exchange, what="POST /_sim/clock/advance")


@dataclass
class ContextBase:
    """One run's shared state; checks receive it and never keep their own."""

    target: Target
    inputs: Inputs = field(default_factory=Inputs)
    clock: TargetClock | None = None
    say: Callable[[str], None] = field(default=lambda _message: None)
    wall: Callable[[], float] = time.monotonic
    watch: SessionWatch = field(default_factory=SessionWatch)
    created_sessions: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
    #: The role whose key the check in progress creates its sessions with.
    creator: str = "api"
    #: The wall time the check in progress must end by (``None``: no budget).
    deadline: float | None = None
    #: The wall time the whole run must end by (``None``: no budget).
    run_deadline: float | None = None
    #: Failures found on the way and owed to another check: (check name, message, exchange).
    owed: list[tuple[str, str, Exchange | None]] = field(default_factory=list)
    #: The run's model of the seed (set by the runner), which judges every exchange.
    model: SeedModel | None = None
    #: Verdicts a script reached through the model's judgements (drained by the runner).
    verdicts: list[Verdict] = field(default_factory=list)
    #: Keys a pending check waits to find quiet (no create may be sent with them meanwhile).
    quiet_keys: set[str] = field(default_factory=set)
    #: The exchange that proved the check in progress (``proves``), else its last one.
    proof: Exchange | None = None
    _owner: dict[str, str] = field(default_factory=dict)  # session id -> role that created it
    _pacers: dict[str, KeyPacer] = field(default_factory=dict)
    _stuck: set[str] = field(default_factory=set)
    _blocked: dict[str, NotChecked] = field(default_factory=dict)  # role -> why creates stopped

    def __post_init__(self) -> None:
        if self.clock is None:
            self.clock = (
                AdminClock(_Admin(self.target))
                if self.target.credentials.admin is not None
                else RealClock()
            )
        for role in ("api", "other_org"):
            if self.target.credentials.get(role) is not None:
                self.pacer(role).start(self.now())

    def pacer(self, role: str) -> KeyPacer:
        if role not in self._pacers:
            self._pacers[role] = KeyPacer(SEED.creates_per_window, SEED.rate_window_seconds)
        return self._pacers[role]

    # -- time ---------------------------------------------------------------------------------

    @property
    def time(self) -> TargetClock:
        assert self.clock is not None
        return self.clock

    @property
    def admin(self) -> bool:
        return self.target.credentials.admin is not None

    def now(self) -> float:
        """The target's time, in target seconds (only differences mean anything)."""
        return self.time.now()

    def wait(
        self, seconds: float, why: str, *, pacing: bool = False, extends_budget: bool = False
    ) -> None:
        """Let ``seconds`` pass on the target. A wait longer than ``--max-wait`` is not taken,
        nor one past the check's budget or the run's. A wait for the rate limit's pacing, or a
        long wait a check names as its own (``extends_budget``: the idempotency window), extends
        the check's budget instead of spending it."""
        if seconds <= 0:
            return
        wall = self.time.wall_seconds(seconds)
        limit = self.inputs.max_wait_seconds
        if wall > limit:
            raise Incomplete(
                f"{why}: a wait of {wall:.0f} s exceeds --max-wait {limit:g}",
                f"--max-wait {math.ceil(wall) + 1}",
            )
        if self.run_deadline is not None and self.wall() + wall > self.run_deadline:
            raise Incomplete(f"{why}: the run's time budget ran out")
        if self.deadline is not None:
            if pacing or extends_budget:
                self.deadline += wall
            elif self.wall() + wall > self.deadline:
                raise Incomplete(f"{why}: the check's time budget ran out")
        self.time.wait(seconds, why)

    def poll(
        self,
        fetch: Callable[[], T],
        done: Callable[[T], bool],
        *,
        within: float,
        step: float,
        why: str,
    ) -> T:
        """``fetch()`` until ``done`` holds or ``within`` target seconds have passed."""
        value = fetch()
        started = self.now()
        waited = 0.0
        while not done(value) and max(waited, self.now() - started) < within:
            self.wait(step, why)
            waited += step
            value = fetch()
        return value

    # -- what the check in progress shows --------------------------------------------------

    def proves(self, exchange: Exchange) -> Exchange:
        """Name ``exchange`` as the one that shows the rule of the check in progress."""
        self.proof = exchange
        return exchange

    def owe(self, check: str, message: str, exchange: Exchange | None = None) -> None:
        """Report a failure of ``check`` found while another check ran."""
        self.owed.append((check, message, exchange))

    # -- discovery ----------------------------------------------------------------------------

    def avatar(self) -> str:
        """``--avatar-id``, else a ready avatar the target lists (a mock runtime preferred)."""
        if self.inputs.avatar_id:
            return self.inputs.avatar_id
        if "avatar" not in self.cache:
            self.cache["avatar"] = self._pick_avatar()
        value = self.cache["avatar"]
        if isinstance(value, Incomplete):
            raise value
        return str(value)

    def _pick_avatar(self) -> str | Incomplete:
        listed = self.target.request(
            "GET", "/v1/avatars", params={"limit": SEED.page_max}, operation="listAvatars"
        )
        body = listed.json() if is_success(listed) else None
        data = body.get("data") if isinstance(body, dict) else None
        ready = [a for a in data or [] if isinstance(a, dict) and a.get("status") == "ready"]
        if not ready:
            return Incomplete("the target lists no ready avatar", "--avatar-id")
        ready.sort(key=lambda a: (a.get("runtime_type") != "mock", not a.get("is_demo", False)))
        return str(ready[0]["id"])

    def transport(self, room: str) -> dict[str, Any]:
        """``--transport-json`` as given, else the default livekit transport in its own room."""
        if self.inputs.transport is not None:
            return {"type": "livekit", **self.inputs.transport}
        return {**DEFAULT_TRANSPORT, "room_name": f"conformance-{room}-{uuid.uuid4().hex[:8]}"}

    def worker_tokens(self) -> tuple[str, ...]:
        """The write-only secrets this run sends, which no answer may contain (RES-SESS-2)."""
        token = (self.inputs.transport or DEFAULT_TRANSPORT).get("worker_token")
        return (token,) if isinstance(token, str) and token else ()

    @property
    def quality(self) -> str:
        """The tier the run creates with: the cheapest (every plan accepts every tier)."""
        return QUALITIES[0]

    def session_body(self, room: str, **fields: Any) -> dict[str, Any]:
        """A create body with every field the seed lists for a request, the seed's values for
        the optional ones (the cheapest tier the plan accepts), overridden by ``fields``."""
        body: dict[str, Any] = {
            "avatar_id": self.avatar(),
            "transport": self.transport(room),
            "idle_timeout_seconds": SEED.idle_default,
            "max_duration_seconds": SEED.max_duration_default,
            "quality": self.quality,
            "metadata": self.metadata(),
        }
        body.update(fields)
        return body

    @staticmethod
    def metadata(**extra: Any) -> dict[str, Any]:
        """Metadata naming one request (``NONCE``): whatever a list later shows carrying it was
        made by that request, so the model can tell a create that made more than it answered."""
        return {"conformance": "avatar-sim", NONCE: uuid.uuid4().hex, **extra}

    def record(self, verdict: Verdict) -> None:
        """A verdict of a model rule that a script obtained (usage against what it made)."""
        self.verdicts.append(verdict)

    def roles(self) -> set[str]:
        """The roles whose keys the run was given."""
        return {
            role
            for role in ("api", "other_org", "runs_read", "runs_write", "revoked")
            if self.target.credentials.get(role) is not None
        }

    def settle_suspicions(self) -> list[Verdict]:
        """Settle the model's suspicions with reads (a session's status as its owner sees it,
        the live sessions an organization lists)."""
        found, self.verdicts = self.verdicts, []
        if self.model is None:
            return found
        return found + self.model.settle(self._status_as, self._org_live)

    def _status_as(self, session_id: str, role: str) -> str | None:
        exchange = self.target.request(
            "GET", f"/v1/sessions/{session_id}", role=role, operation="retrieveSession"
        )
        body = exchange.json() if is_success(exchange) else None
        status = body.get("status") if isinstance(body, dict) else None
        return status if isinstance(status, str) else None

    def _org_live(self, role: str) -> int | None:
        """How many sessions ``role``'s organization lists as live (``None``: unknown)."""
        params: dict[str, Any] = {"limit": SEED.page_max}
        live = 0
        for _ in range(50):
            exchange = self.target.request("GET", "/v1/sessions", role=role, params=params)
            body = exchange.json() if is_success(exchange) else None
            if not isinstance(body, dict) or not isinstance(body.get("data"), list):
                return None
            live += sum(
                1 for s in body["data"] if isinstance(s, dict) and s.get("status") not in TERMINAL
            )
            if body.get("has_more") is not True:
                return live
            params = {"limit": SEED.page_max, "starting_after": body.get("next_cursor")}
        return None

    # -- reading and ending sessions ----------------------------------------------------------

    def owner(self, session_id: str) -> str:
        """The role whose key created ``session_id`` (the API key for any other)."""
        return self._owner.get(session_id, "api")

    def get_session(self, session_id: str) -> tuple[Exchange, dict[str, Any]]:
        exchange = self.target.request(
            "GET",
            f"/v1/sessions/{session_id}",
            role=self.owner(session_id),
            operation="retrieveSession",
        )
        body = expect_status(exchange, 200, what="GET /v1/sessions/{id}")
        if not isinstance(body, dict) or body.get("id") != session_id:
            raise CheckFailed(f"GET of {session_id} answered another resource", exchange)
        return exchange, body

    def end(self, session_id: str) -> Exchange:
        return self.target.request(
            "POST",
            f"/v1/sessions/{session_id}/end",
            role=self.owner(session_id),
            operation="endSession",
        )

    def status(self, session_id: str) -> str | None:
        exchange = self.target.request(
            "GET",
            f"/v1/sessions/{session_id}",
            role=self.owner(session_id),
            operation="retrieveSession",
        )
        body = exchange.json() if is_success(exchange) else None
        status = body.get("status") if isinstance(body, dict) else None
        return status if isinstance(status, str) else None

    def waitable(self, session_id: str) -> bool:
        """Whether the run may still wait on ``session_id`` (not broken, not stuck)."""
        return session_id not in self.watch.broken and session_id not in self._stuck

    def live_sessions(self, role: str | None = None) -> list[str]:
        """This run's sessions that may still hold a slot, of ``role``'s key (or every key)."""
        return [
            s
            for s in self.created_sessions
            if (role is None or self.owner(s) == role)
            and self.waitable(s)
            and self.watch.last(s) not in TERMINAL
        ]

    def settle(self, role: str | None = None) -> bool:
        """End this run's live sessions (of ``role``'s key) and wait until each is terminal. A
        session that does not end in ``SETTLE_SECONDS`` is stuck and never waited on again;
        ``False`` when one was, or when only such sessions are left to hold the key's slot."""
        live = [s for s in self.live_sessions(role) if self.status(s) not in TERMINAL | {None}]
        held = [
            s
            for s in self.created_sessions
            if (role is None or self.owner(s) == role) and not self.waitable(s)
        ]
        if not live and held:
            return False  # the slot is held by sessions this run no longer waits on
        for session_id in live:
            self.end(session_id)
        pending = [s for s in live if self.status(s) not in TERMINAL | {None}]
        if pending:
            left = self.poll(
                lambda: [s for s in pending if self.waitable(s) and self.status(s) not in TERMINAL],
                lambda rest: not rest,
                within=SETTLE_SECONDS,
                step=1.0,
                why="this run's ended sessions to drain",
            )
            self._stuck.update(left)
            return not left
        return True

    def cleanup(self) -> None:
        """End whatever this run created and left live (never judged, never waited on)."""
        for session_id in self.live_sessions():
            if self.status(session_id) not in TERMINAL | {None}:
                self.end(session_id)
