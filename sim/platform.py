"""The composition root: one simulated service, and the one door into it.

``Platform`` wires the kernel (clock, random streams, ids, events) to every service (accounts,
billing, avatars, sessions, runs, assets, webhooks) and exposes each contract operation through
``call(operation_id, caller, params)``. The HTTP facade and the direct Python API both go through
``call``, so driving a scenario either way gives identical records (SIM-7).

Cross-cutting rules live here, once: which operations are public, per-key rate limits
(GAP-LIM-1) and idempotent creates (GAP-LIM-2). Services do the rest and raise ``DomainError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sim.accounts import AccountRegistry, Caller
from sim.avatars.service import AvatarService
from sim.billing.service import Billing
from sim.config import SimConfig
from sim.errors import AuthenticationFailed, DomainError, NotFound, RateSnapshot
from sim.idempotency import IdempotencyStore
from sim.ids import IdFactory
from sim.kernel import Kernel
from sim.ratelimit import RateLimiter
from sim.runs.assets import AssetService
from sim.runs.service import RunService
from sim.sessions.service import SessionService
from sim.webhooks import WebhookDispatcher

__all__ = ["ApiCall", "Operation", "Outcome", "Platform"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one operation produced: a JSON body (or bytes) and what the headers need."""

    body: dict[str, Any] | bytes
    media_type: str = "application/json"
    replayed: bool = False
    rate: RateSnapshot | None = None


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One entry of the API log: what was asked, by whom, and how it ended (SIM-2)."""

    at: float
    operation_id: str
    org_id: str | None
    outcome: str  # "ok", "replayed" or the error code
    error_type: str | None


Handler = Callable[["Platform", Caller | None, dict[str, Any]], dict[str, Any] | Outcome]


@dataclass(frozen=True, slots=True)
class Operation:
    handler: Handler
    public: bool = False
    rate_limit: str | None = None  # name of the limiter bucket
    idempotent: bool = False  # honours Idempotency-Key


def _caller(caller: Caller | None) -> Caller:
    if caller is None:  # the facade authenticates first; this guards the Python API
        raise AuthenticationFailed("api_key.missing", "Send `Authorization: Bearer <key>`.")
    return caller


def _body(params: dict[str, Any]) -> dict[str, Any]:
    body = params.get("body")
    return body if isinstance(body, dict) else {}


# Each handler parses nothing: the facade (or the Python caller) hands over named parameters.
OPERATIONS: dict[str, Operation] = {
    "getStatus": Operation(lambda p, c, a: p.status(), public=True),
    "listPlans": Operation(lambda p, c, a: p.billing.plans(), public=True),
    "createSession": Operation(
        lambda p, c, a: p.sessions.create(_caller(c), _body(a)),
        rate_limit="session_create",
        idempotent=True,
    ),
    "createPipecatSession": Operation(
        lambda p, c, a: p.sessions.create_pipecat(_caller(c), _body(a)),
        rate_limit="session_create",
    ),
    "listSessions": Operation(
        lambda p, c, a: p.sessions.list(
            _caller(c), limit=a.get("limit", p.config.limits.page_size_default),
            starting_after=a.get("starting_after"), status=a.get("status"),
        )  # fmt: skip
    ),
    "retrieveSession": Operation(lambda p, c, a: p.sessions.retrieve(_caller(c), a["session_id"])),
    "endSession": Operation(lambda p, c, a: p.sessions.end(_caller(c), a["session_id"])),
    "createAvatar": Operation(
        lambda p, c, a: p.avatars.create(
            _caller(c), image=a.get("image"), filename=a.get("image_filename"),
            content_type=a.get("image_content_type"), name=a.get("name"),
        ),  # fmt: skip
        rate_limit="avatar_create",
    ),
    "listAvatars": Operation(
        lambda p, c, a: p.avatars.list(
            _caller(c), limit=a.get("limit", p.config.limits.avatar_page_size_default),
            starting_after=a.get("starting_after"), scope=a.get("scope", "all"), q=a.get("q"),
        )  # fmt: skip
    ),
    "retrieveAvatar": Operation(lambda p, c, a: p.avatars.retrieve(_caller(c), a["avatar_id"])),
    "listModels": Operation(lambda p, c, a: p.runs.list_models(_caller(c))),
    "createRun": Operation(
        lambda p, c, a: p.runs.create(_caller(c), a["model_id"], _body(a)),
        rate_limit="run_create",
        idempotent=True,
    ),
    "listRuns": Operation(
        lambda p, c, a: p.runs.list(
            _caller(c), limit=a.get("limit", p.config.limits.page_size_default),
            starting_after=a.get("starting_after"),
        )  # fmt: skip
    ),
    "retrieveRun": Operation(lambda p, c, a: p.runs.retrieve(_caller(c), a["run_id"])),
    "getRunStatus": Operation(lambda p, c, a: p.runs.status(_caller(c), a["run_id"])),
    "listRunEvents": Operation(
        lambda p, c, a: p.runs.events(
            _caller(c), a["run_id"], starting_after=a.get("starting_after"),
            limit=a.get("limit", p.config.limits.run_events_page_size_default),
        )  # fmt: skip
    ),
    "cancelRun": Operation(lambda p, c, a: p.runs.cancel(_caller(c), a["run_id"])),
    "deleteRun": Operation(
        lambda p, c, a: p.runs.delete(_caller(c), a["run_id"]), rate_limit="run_delete"
    ),
    "listAssets": Operation(
        lambda p, c, a: p.assets.list(
            _caller(c), limit=a.get("limit", p.config.limits.page_size_default),
            starting_after=a.get("starting_after"),
        )  # fmt: skip
    ),
    "getAssetContent": Operation(lambda p, c, a: p.asset_content(_caller(c), a["asset_id"])),
    "getUsage": Operation(
        lambda p, c, a: p.usage(_caller(c), a),
    ),
    "getQuota": Operation(lambda p, c, a: p.quota(_caller(c))),
}


class Platform:
    """One simulated service instance. Create with ``Platform.create(config)``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.config: SimConfig = kernel.config
        self.clock = kernel.clock
        self.accounts = AccountRegistry(kernel.config, kernel.clock, kernel.ids)
        self.billing = Billing(kernel, self.accounts)
        self.avatars = AvatarService(kernel)
        self.sessions = SessionService(kernel, self.accounts, self.billing, self.avatars)
        self.assets = AssetService(kernel)
        self.runs = RunService(kernel, self.accounts, self.billing, self.assets)
        self.webhooks = WebhookDispatcher(kernel)
        self.idempotency = IdempotencyStore(kernel.clock, kernel.config.limits)
        # Request ids come from their own stream so HTTP traffic never shifts domain ids.
        self._request_ids = IdFactory(kernel.clock, kernel.streams.stream("request_ids"))
        self._limiters = self._build_limiters()
        self.api_log: list[ApiCall] = []

    @classmethod
    def create(cls, config: SimConfig | None = None) -> Platform:
        return cls(Kernel.create(config))

    # -- the door ------------------------------------------------------------------------------

    def is_public(self, operation_id: str) -> bool:
        return OPERATIONS[operation_id].public

    def authenticate(self, authorization: str | None) -> Caller:
        return self.accounts.authenticate(authorization)

    def new_request_id(self) -> str:
        return self._request_ids.new("request")

    def call(self, operation_id: str, caller: Caller | None, params: dict[str, Any]) -> Outcome:
        """Run one contract operation; raises ``DomainError`` for every refusal."""
        try:
            operation = OPERATIONS[operation_id]
        except KeyError:
            raise NotFound("route.not_found", f"No operation {operation_id}.") from None
        org_id = caller.org_id if caller is not None else None
        try:
            outcome = self._call(operation_id, operation, caller, params)
        except DomainError as error:
            self._log(operation_id, org_id, error.code, error.type)
            raise
        self._log(operation_id, org_id, "replayed" if outcome.replayed else "ok", None)
        return outcome

    def _call(
        self, operation_id: str, operation: Operation, caller: Caller | None,
        params: dict[str, Any],
    ) -> Outcome:  # fmt: skip
        if not operation.public:
            caller = _caller(caller)
        rate: RateSnapshot | None = None
        limiter = self._limiters.get(operation.rate_limit or "")
        if limiter is not None and caller is not None:
            rate = limiter.hit(caller.key_id)

        def run() -> dict[str, Any]:
            result = operation.handler(self, caller, params)
            if isinstance(result, Outcome):
                raise TypeError("idempotent operations return JSON bodies")
            return result

        key = params.get("idempotency_key")
        try:
            if operation.idempotent and caller is not None and key is not None:
                fingerprint_body = {"path": _path_params(params), "body": params.get("body")}
                body, replayed = self.idempotency.run(
                    caller.org_id, key, operation_id, fingerprint_body, run
                )
                return Outcome(body=body, replayed=replayed, rate=rate)
            result = operation.handler(self, caller, params)
        except DomainError as error:
            if error.rate is None and rate is not None:
                error.rate = rate
            raise
        if isinstance(result, Outcome):
            return result if rate is None else _with_rate(result, rate)
        return Outcome(body=result, rate=rate)

    def _log(self, operation_id: str, org_id: str | None, outcome: str,
             error_type: str | None) -> None:  # fmt: skip
        self.api_log.append(ApiCall(self.clock.now, operation_id, org_id, outcome, error_type))

    def _build_limiters(self) -> dict[str, RateLimiter]:
        rate = self.config.limits.rate
        buckets = {
            "session_create": rate.session_creates_per_window,
            "run_create": rate.run_creates_per_window,
            "avatar_create": rate.avatar_creates_per_window,
            "run_delete": rate.run_deletes_per_window,
        }
        return {
            name: RateLimiter(self.clock, name, limit, rate.window_seconds)
            for name, limit in buckets.items()
            if limit is not None
        }

    # -- operations that combine services ------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return self.sessions.platform_status()

    def usage(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        caller.require_unrestricted()
        return self.billing.usage(
            caller.org_id,
            period=params.get("period"),
            period_start=params.get("period_start"),
            period_end=params.get("period_end"),
            timezone=params.get("timezone"),
        )

    def quota(self, caller: Caller) -> dict[str, Any]:
        caller.require_unrestricted()
        return self.billing.quota(caller.org_id)

    def asset_content(self, caller: Caller, asset_id: str) -> Outcome:
        data, media_type = self.assets.content(caller, asset_id)
        return Outcome(body=data, media_type=media_type)

    # -- time ----------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)


def _path_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k.endswith("_id")}


def _with_rate(outcome: Outcome, rate: RateSnapshot) -> Outcome:
    return Outcome(body=outcome.body, media_type=outcome.media_type, replayed=outcome.replayed,
                   rate=rate)  # fmt: skip
