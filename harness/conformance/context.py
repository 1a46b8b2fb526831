"""What one conformance run shares between its checks: the target, what the user supplied, its
clock, the keys' create pacing, and the sessions it created.

Why one object: every check that creates a session must send a body that any reading of the seed
accepts, pick an avatar the target lists, respect the create rate limit and the per-key session
cap in the same way, and end what it created. Time passes through one ``TargetClock``
(``harness.conformance.clock``): the simulator's admin clock, real waiting scaled by the target's
time factor (the default), or none at all (``--quick``).

A create is never turned into a skip by the target's limits: the run keeps each key within the
seed's 10 creates a minute (``KeyPacer``), waits out a rate-limit refusal by its ``Retry-After``
or ``X-RateLimit-Reset``, ends its own sessions when the per-key cap refuses, and waits on a
``503 at_capacity`` by its ``Retry-After``. What it cannot get past says why and what would help
(``Incomplete``): a key with no credits, sessions that never end, a transport the target refuses.
A refusal that breaks the rate limit under every reading is reported against
``create_rate_limit`` wherever it happens.

Every wait is bounded: by ``--max-wait`` for one wait, and by the budget of the check in
progress (``deadline``, in wall seconds). Waits for the rate limit's pacing extend the budget
rather than spend it, since they are bounded by the window itself.

The harness only sends what the seed lists and the user gave (``Inputs``): a livekit transport
with ``url``, ``room_name`` and ``worker_token``; an avatar and a model the target lists; every
optional create field spelled out, so no default of any implementation is relied on.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.conformance.checks import (
    CheckFailed,
    Incomplete,
    NotApplicable,
    NotChecked,
    envelope_of,
    is_rate_limited,
)
from harness.conformance.clock import AdminClock, RealClock, TargetClock
from harness.conformance.instances import minimal_instance
from harness.conformance.model import NONCE, SeedModel, Verdict
from harness.conformance.pacing import KeyPacer, retry_hint
from harness.conformance.responses import DEFAULT_WORKER_TOKEN
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange, Target
from harness.conformance.watch import TERMINAL, SessionWatch

__all__ = [
    "DEFAULT_TRANSPORT",
    "QUALITIES",
    "TERMINAL",
    "Context",
    "Inputs",
    "RunPlan",
    "expect_status",
    "is_success",
    "refusal_code",
    "refusal_type",
]

T = TypeVar("T")

#: A livekit transport with every field the seed lists for a request. The room server does not
#: exist (``.invalid`` never resolves); ``--transport-json`` gives a real one.
DEFAULT_TRANSPORT: Mapping[str, Any] = {
    "type": "livekit",
    "url": "wss://conformance.invalid",
    "room_name": "conformance",
    "worker_token": DEFAULT_WORKER_TOKEN,
    "audio_source": "data_stream",
}

#: The seed's quality tiers, cheapest first: the run creates with the first its plan accepts.
QUALITIES = ("mock", "lite", "standard", "pro")

#: How long the run lets its ended sessions take to drain before it calls them stuck (target
#: seconds; the seed states no bound, the simulator drains within 5 s).
SETTLE_SECONDS = 90.0
#: A 503 at_capacity is retried this many times (each after its Retry-After) before giving up.
_CAPACITY_RETRIES = 3
#: Rate-limit refusals waited out before the run looks for a whole quiet window.
_HINTED_RETRIES = 2


@dataclass(frozen=True, slots=True)
class Inputs:
    """What only the user can give, and the longest single wait (wall seconds) they allow."""

    transport: Mapping[str, Any] | None = None
    avatar_id: str | None = None
    #: ``--model`` (repeatable), each with its run body (``--run-json``: one for every model,
    #: or one each, in order); ``None`` where the body is built from the model's schemas.
    models: tuple[str, ...] = ()
    run_bodies: tuple[Mapping[str, Any] | None, ...] = ()
    max_wait_seconds: float = 180.0

    def body_for(self, model: str) -> Mapping[str, Any] | None:
        """The run body the user gave for ``model`` (``None``: none given)."""
        if model in self.models and len(self.run_bodies) == len(self.models):
            return self.run_bodies[self.models.index(model)]
        return self.run_bodies[0] if len(self.run_bodies) == 1 else None


@dataclass(frozen=True, slots=True)
class RunPlan:
    """A run create the target accepted once: the model and the body to send again."""

    model: str
    body: Mapping[str, Any]

    @property
    def path(self) -> str:
        # The seed: the model id (``<publisher>/<model>``) is the run path segment, sent as is.
        return f"/v1/run/{self.model}"


def is_success(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


def refusal_type(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("type")
    return value if isinstance(value, str) else None


def refusal_code(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("code")
    return value if isinstance(value, str) else None


def refusal_param(exchange: Exchange) -> str | None:
    error = envelope_of(exchange) if not is_success(exchange) else None
    value = None if error is None else error.get("param")
    return value if isinstance(value, str) else None


def expect_status(exchange: Exchange, *statuses: int, what: str) -> Any:
    """The JSON body when the status is one of ``statuses`` (2xx when none), else a failure."""
    ok = exchange.status in statuses if statuses else is_success(exchange)
    if not ok:
        wanted = "/".join(map(str, statuses)) or "2xx"
        raise CheckFailed(
            f"{what}: expected {wanted}, got {exchange.status}: {exchange.body[:300]!r}", exchange
        )
    return exchange.json()


def _session_of(body: Any) -> dict[str, Any] | None:
    session = body.get("session", body) if isinstance(body, dict) else None
    return session if isinstance(session, dict) else None


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
class Context:
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

    # -- creating sessions --------------------------------------------------------------------

    def pacer(self, role: str) -> KeyPacer:
        if role not in self._pacers:
            self._pacers[role] = KeyPacer(SEED.creates_per_window, SEED.rate_window_seconds)
        return self._pacers[role]

    def blocked(self, role: str) -> NotChecked | None:
        """Why ``role``'s key can create no more sessions in this run, if it cannot."""
        return self._blocked.get(role)

    def create_session(
        self,
        body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        role: str | None = None,
        path: str = "/v1/sessions",
        settle: bool = True,
    ) -> Exchange:
        """``POST /v1/sessions`` (or ``path``) as a careful client would: paced within the
        seed's rate limit, a rate-limit refusal waited out, this run's own sessions ended when
        the per-key cap refuses (unless ``settle`` is false), a ``503 at_capacity`` retried after
        its ``Retry-After``. Any other answer is returned to the caller to judge."""
        role = role or self.creator
        if role in self._blocked:
            raise self._blocked[role]
        pacer = self.pacer(role)
        hinted = capacity = settled = 0
        while True:
            now = self.now()
            self.wait(pacer.ready_at(now) - now, "the create rate limit of "
                      f"{SEED.creates_per_window} a minute per key", pacing=True)  # fmt: skip
            exchange = self._post_session(body, headers, role, path)
            pacer.record(self.now())
            if is_rate_limited(exchange):
                self._stop_if_limit_broken(role)
                hinted += 1
                delay = self._hint(exchange) if hinted <= _HINTED_RETRIES else None
                self.wait(
                    pacer.quiet_at(self.now()) - self.now() if delay is None else delay,
                    "a rate-limit refusal to clear",
                    pacing=True,
                )
                continue
            code = refusal_code(exchange)
            if exchange.status == 429 and code == "concurrent_sessions" and settle and settled < 2:
                settled += 1
                if not self.settle(role):
                    why = NotApplicable(
                        "stopped: the key's session cap is held by sessions that do not end ("
                        + ", ".join(sorted(self._stuck | self.watch.broken))
                        + "; reported under session_timers or terminal_states_final)"
                    )
                    self._blocked[role] = why
                    raise why
                continue
            if exchange.status == 503 and capacity < _CAPACITY_RETRIES:
                capacity += 1
                self.wait(self._hint(exchange) or 1.0, "a 503 to clear (no free worker)")
                continue
            break
        return exchange

    def _hint(self, exchange: Exchange) -> float:
        """The target's retry hint, within one rate window (a hint beyond it is not believed)."""
        window = SEED.rate_window_seconds
        hint = retry_hint(exchange)
        return min(max(hint if hint is not None else 1.0, 1.0), window + 1)

    def _stop_if_limit_broken(self, role: str) -> None:
        """Stop creating with ``role``'s key once the model has found its limiter refusing
        what no reading of the seed refuses (waiting on it again would only wait)."""
        key = self.model.rates.keys.get(role) if self.model is not None else None
        if key is not None and key.failed:
            why = NotApplicable(
                "stopped: the target refuses this key's creates where the seed admits them "
                "(reported under create_rate_limit)"
            )
            self._blocked[role] = why
            raise why

    def _post_session(
        self, body: Any, headers: Mapping[str, str] | None, role: str, path: str
    ) -> Exchange:
        exchange = self.target.request(
            "POST", path, role=role, json_body=body, headers=headers, operation=f"POST {path}"
        )
        self.remember(exchange, role)
        return exchange

    def remember(self, exchange: Exchange, role: str | None = None) -> None:
        """Note a session a create answered, so the run ends it."""
        session = _session_of(exchange.json()) if is_success(exchange) else None
        session_id = session.get("id") if session is not None else None
        if isinstance(session_id, str) and session_id not in self._owner:
            self.created_sessions.append(session_id)
            self._owner[session_id] = role or self.creator

    def new_session(self, room: str, **fields: Any) -> tuple[Exchange, dict[str, Any]]:
        """Create a session with ``session_body``; what stops it says why (``Incomplete``)."""
        exchange = self.create_session(self.session_body(room, **fields))
        return exchange, self.created(exchange)

    def created(self, exchange: Exchange) -> dict[str, Any]:
        """The session a create answered, or why there is none. A refusal the seed allows for
        reasons only the user can change (credits, a room the worker can join, an avatar) leaves
        the check incomplete, naming what to give; any other refusal was judged by the model
        (``session_create``, ``concurrency_caps``) and stops the script."""
        if is_success(exchange):
            session = _session_of(exchange.json())
            if session is None or not str(session.get("id", "")).startswith("sess_"):
                raise CheckFailed(f"a created session has no sess_ id: {session!r}", exchange)
            return session
        code = refusal_code(exchange) or str(exchange.status)
        param = refusal_param(exchange) or ""
        if exchange.status == 402:
            if self.model is not None and self.model.can_start_session is True:
                raise NotApplicable("stopped: a create refused 402 (reported under session_create)")
            raise Incomplete(
                f"the key's organization cannot pay for a session (402 {code})",
                "--api-key (an organization with credits)",
            )
        if exchange.status == 429 and code == "concurrent_sessions":
            if self.live_sessions(self.creator) or self._stuck:
                raise NotApplicable(
                    "stopped: the key's session cap is held by sessions that do not end "
                    "(reported under session_timers)"
                )
            raise Incomplete(
                "the organization's session cap is held by sessions this run did not make",
                "--api-key (an organization without other live sessions)",
            )
        if exchange.status == 503:
            raise Incomplete(
                f"the target had no free worker for a session ({exchange.status} {code}) "
                "after its Retry-After, several times"
            )
        if self.inputs.transport is None and (
            param.startswith("transport") or "transport" in code or "room" in code
        ):
            raise Incomplete(
                f"the target refuses the harness's transport ({exchange.status} {code}, param "
                f"{param or None}): give a room and token it accepts",
                "--transport-json",
            )
        if param.startswith("avatar") or "avatar" in code:
            raise Incomplete(
                f"the target refuses the avatar {self.avatar()} ({exchange.status} {code})",
                "--avatar-id",
            )
        raise NotApplicable(
            f"stopped: a create with every field the seed lists, at its stated values, was "
            f"refused {exchange.status} {code} (reported under session_create)"
        )

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

    def quiesce_runs(self, within: float) -> None:
        """Wait until every run of this organization the run knows shows ``completed_at``
        (so that no charge lands between two reads a script compares)."""
        if self.model is None:
            return
        for run_id, _ in list(self.model.runs.model.items()):
            if self.model.ownership.owner.get(run_id) == "own":
                self.finished_run(run_id, within)

    def judge_no_charge(self, before: Any, after: Any, what: str) -> None:
        """``what`` was a replay: the organization's usage took no second charge."""
        from harness.conformance.model.idempotency_table import IDEMPOTENCY

        def charged(usage: Any) -> Any:
            return usage.get("credits_charged") if isinstance(usage, dict) else None

        if not isinstance(charged(before), int | float) or not isinstance(
            charged(after), int | float
        ):
            return
        exchange = self.proof
        if charged(after) > charged(before):
            self.record(Verdict.failed(
                IDEMPOTENCY, exchange,
                f"{what} took a second charge: credits_charged rose from {charged(before)} to "
                f"{charged(after)}",
            ))  # fmt: skip
        else:
            self.record(Verdict.passed(IDEMPOTENCY, exchange, edge=True))

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

    # -- runs ---------------------------------------------------------------------------------

    def models(self) -> list[dict[str, Any]]:
        """The catalog the key sees (``GET /v1/models``)."""
        if "models" not in self.cache:
            listed = self.target.request("GET", "/v1/models", operation="listModels")
            body = listed.json() if listed.status == 200 else None
            data = body.get("data") if isinstance(body, dict) else None
            self.cache["models"] = [m for m in data or [] if isinstance(m, dict) and m.get("id")]
        return list(self.cache["models"])

    def run_plan(self) -> RunPlan:
        """A run create the target accepts: ``--model``/``--run-json`` if given, else a body
        built from each listed, available model's ``request_schemas`` until one is accepted.
        The accepted run's exchange is kept (``first_run``) for the checks that need one."""
        if "plan" not in self.cache:
            self.cache["plan"] = self._find_plan()
        value = self.cache["plan"]
        if isinstance(value, Incomplete):
            raise value
        assert isinstance(value, RunPlan)
        return value

    def first_run(self) -> dict[str, Any]:
        self.run_plan()
        run = self.cache["first_run"]
        assert isinstance(run, dict)
        return run

    def candidates(self, media_first: bool = False) -> Iterator[RunPlan]:
        """Run creates worth trying: ``--model``/``--run-json``, else one per operation of each
        listed model's ``request_schemas`` (models with media outputs first if asked)."""
        models = self.models()
        if self.inputs.models:
            listed = {str(m.get("id")): m for m in models}
            models = [listed.get(m, {"id": m, "available": True}) for m in self.inputs.models]

        def rank(model: dict[str, Any]) -> tuple[bool, bool]:
            outputs = model.get("output_modalities") or []
            media = any(m in ("audio", "image", "video") for m in outputs)
            return model.get("available") is not True, media_first and not media

        models.sort(key=rank)
        for model in models:
            model_id = str(model["id"])
            given = self.inputs.body_for(model_id)
            if given is not None:
                yield RunPlan(model_id, dict(given))
                continue
            schemas = model.get("request_schemas")
            for operation, schema in (schemas or {}).items() if isinstance(schemas, dict) else ():
                instance = minimal_instance(schema)
                if instance is not None:
                    yield RunPlan(model_id, {"operation": operation, "input": instance})

    def finished_run(self, run_id: str, within: float) -> dict[str, Any]:
        """The run once it shows ``completed_at`` (run status names are a gap), or as it last
        was after ``within`` target seconds."""

        def fetch() -> Any:
            exchange = self.target.request("GET", f"/v1/runs/{run_id}", operation="retrieveRun")
            return exchange.json()

        run = self.poll(
            fetch,
            lambda r: isinstance(r, dict) and r.get("completed_at") is not None,
            within=within,
            step=2.0,
            why="a run to finish",
        )
        return run if isinstance(run, dict) else {}

    def _find_plan(self) -> RunPlan | Incomplete:
        tried: list[str] = []
        for plan in self.candidates():
            exchange = self.target.request(
                "POST", plan.path, json_body=dict(plan.body), operation="createRun"
            )
            if is_success(exchange) and isinstance(exchange.json(), dict):
                self.cache["first_run"] = exchange.json()
                self.cache["first_run_exchange"] = exchange
                return plan
            if exchange.status in (402, 429, 503):
                code = refusal_code(exchange) or exchange.status
                return Incomplete(f"the target refused to create a run ({code})")
            tried.append(f"{plan.model} {exchange.status} {refusal_code(exchange)}")
            if len(tried) >= 8:
                break
        if not tried:
            return Incomplete(
                "the target lists no model with request_schemas", "--model and --run-json"
            )
        return Incomplete(
            "the target refused every run body built from request_schemas ("
            + "; ".join(tried)
            + ")",
            "--model and --run-json",
        )
