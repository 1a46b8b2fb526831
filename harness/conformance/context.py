"""What one conformance run shares between its checks: the target, what the user supplied,
time, and the sessions it created.

Why one object: every check that creates a session must send a body that any reading of the seed
accepts, pick an avatar the target lists, wait out the create rate limit and the per-key session
cap in the same way, and end what it created. Time-dependent rules (timers, rate windows) need a
clock, which a run has in one of three ways:

* ``--sim-admin-token``: the simulator's own clock, moved through ``/_sim/clock/advance``;
* ``--real-time``: real waiting, each wait announced (``say``) with its length and reason;
* neither: a check that must wait is skipped, naming the options that would let it run.

The harness only sends what the seed lists and the user gave (``Inputs``): a livekit transport
with ``url``, ``room_name`` and ``worker_token``; an avatar and a model the target lists; every
optional create field spelled out, so no default of any implementation is relied on.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from harness.conformance.checks import CheckFailed, Skipped, envelope_of
from harness.conformance.instances import minimal_instance
from harness.conformance.responses import DEFAULT_WORKER_TOKEN
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange, Target

__all__ = [
    "DEFAULT_TRANSPORT",
    "TERMINAL",
    "Context",
    "Inputs",
    "RunPlan",
    "expect_status",
    "is_success",
    "refusal_code",
    "refusal_type",
    "retry_after_seconds",
]

T = TypeVar("T")

#: The seed's terminal session states.
TERMINAL = frozenset({"ended", "failed", "canceled"})

#: A livekit transport with every field the seed lists for a request. The room server does not
#: exist (``.invalid`` never resolves); ``--transport-json`` gives a real one.
DEFAULT_TRANSPORT: Mapping[str, Any] = {
    "type": "livekit",
    "url": "wss://conformance.invalid",
    "room_name": "conformance",
    "worker_token": DEFAULT_WORKER_TOKEN,
    "audio_source": "data_stream",
}

#: The seed's values for the optional create fields, sent explicitly (never a default).
SESSION_DEFAULTS: Mapping[str, Any] = {
    "idle_timeout_seconds": SEED.idle_default,
    "max_duration_seconds": SEED.max_duration_default,
    "quality": "mock",
}

_CREATE_ATTEMPTS = 4
_SETTLE_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class Inputs:
    """What only the user can give, and how the run may spend time."""

    transport: Mapping[str, Any] | None = None
    avatar_id: str | None = None
    model: str | None = None
    run_body: Mapping[str, Any] | None = None
    real_time: bool = False
    max_wait_seconds: float = 180.0


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


def retry_after_seconds(exchange: Exchange, default: float = 1.0) -> float:
    """``Retry-After`` in seconds, at least one: delay-seconds as given, an HTTP date counted
    from the response's ``Date`` (the target's clock, which need not be ours), else ``default``."""
    raw = (exchange.headers.get("retry-after") or "").strip()
    if raw.isdigit():
        return max(float(raw), 1.0)
    try:
        until = parsedate_to_datetime(raw)
        now = parsedate_to_datetime(exchange.headers.get("date") or "")
    except (TypeError, ValueError):
        return default
    return max((until - now).total_seconds(), 1.0)


def expect_status(exchange: Exchange, *statuses: int, what: str) -> Any:
    """The JSON body when the status is one of ``statuses`` (2xx when none), else a failure."""
    ok = exchange.status in statuses if statuses else is_success(exchange)
    if not ok:
        wanted = "/".join(map(str, statuses)) or "2xx"
        raise CheckFailed(
            f"{what}: expected {wanted}, got {exchange.status}: {exchange.body[:300]!r}", exchange
        )
    return exchange.json()


@dataclass
class Context:
    """One run's shared state; checks receive it and never keep their own."""

    target: Target
    inputs: Inputs = field(default_factory=Inputs)
    say: Callable[[str], None] = field(default=lambda _message: None)
    sleep: Callable[[float], None] = field(default=time.sleep)
    created_sessions: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)

    # -- time ---------------------------------------------------------------------------------

    @property
    def admin(self) -> bool:
        return self.target.credentials.admin is not None

    @property
    def has_time(self) -> bool:
        return self.admin or self.inputs.real_time

    def wait(self, seconds: float, why: str) -> None:
        """Let ``seconds`` pass on the target: its simulated clock, or real time, or skip."""
        if seconds <= 0:
            return
        if self.admin:
            exchange = self.target.request(
                "POST", "/_sim/clock/advance", role="admin", json_body={"seconds": seconds}
            )
            expect_status(exchange, what="POST /_sim/clock/advance")
            return
        if not self.inputs.real_time:
            raise Skipped(f"{why}: needs --sim-admin-token or --real-time to wait {seconds:g} s")
        if seconds > self.inputs.max_wait_seconds:
            limit = self.inputs.max_wait_seconds
            raise Skipped(f"{why}: a wait of {seconds:g} s exceeds --max-wait {limit:g}")
        self.say(f"waiting {seconds:g} s in real time: {why}")
        self.sleep(seconds)

    def poll(
        self,
        fetch: Callable[[], T],
        done: Callable[[T], bool],
        *,
        within: float,
        step: float,
        why: str,
    ) -> T:
        """``fetch()`` until ``done`` holds or ``within`` seconds have passed on the target."""
        value = fetch()
        waited = 0.0
        while not done(value) and waited < within:
            self.wait(step, why)
            waited += step
            value = fetch()
        return value

    # -- discovery ----------------------------------------------------------------------------

    def avatar(self) -> str:
        """``--avatar-id``, else a ready avatar the target lists (a mock runtime preferred)."""
        if self.inputs.avatar_id:
            return self.inputs.avatar_id
        if "avatar" not in self.cache:
            self.cache["avatar"] = self._pick_avatar()
        value = self.cache["avatar"]
        if isinstance(value, Skipped):
            raise value
        return str(value)

    def _pick_avatar(self) -> str | Skipped:
        listed = self.target.request(
            "GET", "/v1/avatars", params={"limit": SEED.page_max}, operation="listAvatars"
        )
        body = listed.json() if is_success(listed) else None
        data = body.get("data") if isinstance(body, dict) else None
        ready = [a for a in data or [] if isinstance(a, dict) and a.get("status") == "ready"]
        if not ready:
            return Skipped("the target lists no ready avatar; give --avatar-id")
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

    def session_body(self, room: str, **fields: Any) -> dict[str, Any]:
        """A create body with every field the seed lists for a request, the seed's values for
        the optional ones (quality ``mock``, the cheapest tier), overridden by ``fields``."""
        body: dict[str, Any] = {
            "avatar_id": self.avatar(),
            "transport": self.transport(room),
            **SESSION_DEFAULTS,
            "metadata": {"conformance": "avatar-sim"},
        }
        body.update(fields)
        return body

    # -- sessions -----------------------------------------------------------------------------

    def create_session(
        self,
        body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        role: str = "api",
        path: str = "/v1/sessions",
        settle: bool = True,
    ) -> Exchange:
        """``POST /v1/sessions`` (or ``path``) as the harness's client would: a rate-limit
        refusal waits its ``Retry-After``, a per-key cap refusal (unless ``settle`` is false)
        waits for this run's earlier sessions to end; any other answer is returned to the
        caller to judge."""
        exchange = self._post_session(body, headers, role, path)
        for _ in range(_CREATE_ATTEMPTS):
            if exchange.status != 429:
                break
            if refusal_type(exchange) == "rate_limit":
                self.wait(retry_after_seconds(exchange), "the session create rate limit")
            elif (
                settle and refusal_code(exchange) == "concurrent_sessions" and self._live_sessions()
            ):
                self.settle()
            else:
                break
            exchange = self._post_session(body, headers, role, path)
        return exchange

    def _post_session(
        self, body: Any, headers: Mapping[str, str] | None, role: str, path: str
    ) -> Exchange:
        exchange = self.target.request(
            "POST", path, role=role, json_body=body, headers=headers, operation=f"POST {path}"
        )
        self.remember(exchange)
        return exchange

    def remember(self, exchange: Exchange) -> None:
        """Note a session a create answered, so the run ends it."""
        if not is_success(exchange):
            return
        body = exchange.json()
        session = body.get("session", body) if isinstance(body, dict) else None
        session_id = session.get("id") if isinstance(session, dict) else None
        if isinstance(session_id, str) and session_id not in self.created_sessions:
            self.created_sessions.append(session_id)

    def new_session(self, room: str, **fields: Any) -> tuple[Exchange, dict[str, Any]]:
        """Create a session with ``session_body``; a refusal for credits, rate, caps or capacity
        skips the calling check (the target could not give it what it needs)."""
        exchange = self.create_session(self.session_body(room, **fields))
        return exchange, self.created(exchange)

    def created(self, exchange: Exchange) -> dict[str, Any]:
        """The session a create answered, or ``Skipped`` for a refusal that is not a fault."""
        if exchange.status in (402, 429, 503):
            code = refusal_code(exchange) or exchange.status
            raise Skipped(f"the target refused to create a session now ({code})")
        session = expect_status(exchange, what="POST /v1/sessions")
        if not isinstance(session, dict) or not str(session.get("id", "")).startswith("sess_"):
            raise CheckFailed(f"a created session has no sess_ id: {session!r}", exchange)
        return session

    def get_session(self, session_id: str) -> tuple[Exchange, dict[str, Any]]:
        exchange = self.target.request(
            "GET", f"/v1/sessions/{session_id}", operation="retrieveSession"
        )
        body = expect_status(exchange, 200, what="GET /v1/sessions/{id}")
        if not isinstance(body, dict) or body.get("id") != session_id:
            raise CheckFailed(f"GET of {session_id} answered another resource", exchange)
        return exchange, body

    def end(self, session_id: str) -> Exchange:
        return self.target.request("POST", f"/v1/sessions/{session_id}/end", operation="endSession")

    def _status(self, session_id: str) -> str | None:
        exchange = self.target.request(
            "GET", f"/v1/sessions/{session_id}", operation="retrieveSession", observe=False
        )
        body = exchange.json() if is_success(exchange) else None
        status = body.get("status") if isinstance(body, dict) else None
        return status if isinstance(status, str) else None

    def _live_sessions(self) -> list[str]:
        return [s for s in self.created_sessions if self._status(s) not in TERMINAL | {None}]

    def settle(self) -> None:
        """End every session this run created and wait until each is terminal (a running one
        drains through ``ending`` first, and still counts against the per-key cap)."""
        live = self._live_sessions()
        for session_id in live:
            self.end(session_id)
        pending = [s for s in live if self._status(s) not in TERMINAL | {None}]
        if pending:
            self.poll(
                lambda: [s for s in pending if self._status(s) not in TERMINAL | {None}],
                lambda left: not left,
                within=_SETTLE_SECONDS,
                step=1.0,
                why="this run's ended sessions to drain",
            )

    def cleanup(self) -> None:
        """End whatever this run created and left live (never judged)."""
        for session_id in self.created_sessions:
            if self._status(session_id) not in TERMINAL | {None}:
                self.target.request(
                    "POST", f"/v1/sessions/{session_id}/end", operation="endSession", observe=False
                )

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
        if isinstance(value, Skipped):
            raise value
        assert isinstance(value, RunPlan)
        return value

    def first_run(self) -> dict[str, Any]:
        self.run_plan()
        run = self.cache["first_run"]
        assert isinstance(run, dict)
        return run

    def _candidates(self) -> Iterator[RunPlan]:
        models = self.models()
        if self.inputs.model:
            models = [m for m in models if m.get("id") == self.inputs.model] or [
                {"id": self.inputs.model, "available": True}
            ]
        models.sort(key=lambda m: m.get("available") is not True)
        for model in models:
            model_id = str(model["id"])
            if self.inputs.run_body is not None:
                yield RunPlan(model_id, dict(self.inputs.run_body))
                continue
            schemas = model.get("request_schemas")
            for operation, schema in (schemas or {}).items() if isinstance(schemas, dict) else ():
                instance = minimal_instance(schema)
                if instance is not None:
                    yield RunPlan(model_id, {"operation": operation, "input": instance})

    def _find_plan(self) -> RunPlan | Skipped:
        tried: list[str] = []
        for plan in self._candidates():
            exchange = self.target.request(
                "POST", plan.path, json_body=dict(plan.body), operation="createRun"
            )
            if is_success(exchange) and isinstance(exchange.json(), dict):
                self.cache["first_run"] = exchange.json()
                self.cache["first_run_exchange"] = exchange
                return plan
            if exchange.status in (402, 429, 503):
                return Skipped(f"the target refused to create a run now ({exchange.status})")
            tried.append(f"{plan.model} {exchange.status} {refusal_code(exchange)}")
            if len(tried) >= 8:
                break
        if not tried:
            return Skipped("the target lists no model with request_schemas; give --model")
        return Skipped(
            "the target refused every run body built from request_schemas ("
            + "; ".join(tried)
            + "); give --model and --run-json"
        )
