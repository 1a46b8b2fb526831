"""The composition root: one simulated service, and the one door into it.

``Platform`` wires the kernel (clock, random streams, ids, events) to every service (accounts,
billing, avatars, sessions, runs, assets, webhooks) and exposes each contract operation through
``call(operation_id, caller, params)``. The HTTP facade and the direct Python API both go through
``call``, so driving a scenario either way gives identical records (SIM-7).

Cross-cutting rules live here, once: which operations are public, per-key rate limits
(GAP-LIM-1), idempotent creates (GAP-LIM-2) and the API log. Services do the rest and raise
``DomainError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, NamedTuple

from sim.accounts import AccountRegistry, Caller
from sim.admin import PlatformAdmin
from sim.apilog import ApiCall, ApiLog
from sim.avatars.service import AvatarService
from sim.billing.service import Billing
from sim.config import SimConfig
from sim.errors import AuthenticationFailed, DomainError, NotFound, RateSnapshot
from sim.idempotency import Body, IdempotencyStore, fingerprint
from sim.ids import IdFactory
from sim.journal import Prepared
from sim.kernel import Kernel
from sim.ratelimit import RateLimiter
from sim.runs.assets import AssetService
from sim.runs.service import RunService
from sim.sessions.rollup import status_body
from sim.sessions.service import SessionService
from sim.sessions.validation import SessionRequest, plain_create
from sim.values import check_values
from sim.webhooks import WebhookDispatcher

__all__ = ["ApiCall", "Check", "Operation", "Outcome", "Params", "Platform", "PlatformHandedOver"]

#: An operation's named parameters, or a parser producing them (see ``Platform.call``).
Params = dict[str, Any] | Callable[[], dict[str, Any]]

#: A caller's last check of the parameters, run after the domain's (see ``Platform.call``).
Check = Callable[[dict[str, Any]], None]


_JSON: Final = "application/json"
_new_tuple: Final = tuple.__new__


class Outcome(NamedTuple):
    """What one operation produced: a JSON body (or bytes) and what the headers need.

    A NamedTuple rather than a frozen dataclass: as immutable, and built for every call without
    a frozen dataclass's one ``object.__setattr__`` per field."""

    body: dict[str, Any] | bytes
    media_type: str = _JSON
    replayed: bool = False
    rate: RateSnapshot | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """How the platform treats one contract operation (looked up by its operationId)."""

    method: str  # name of the Platform method that serves it
    public: bool = False
    rate_limit: str | None = None  # name of the limiter bucket
    idempotent: bool = False  # honours Idempotency-Key


def _caller(caller: Caller | None) -> Caller:
    if caller is None:  # the facade authenticates first; this guards the Python API
        raise AuthenticationFailed("api_key.missing", "Send `Authorization: Bearer <key>`.")
    return caller


OPERATIONS: dict[str, Operation] = {
    "getStatus": Operation("op_get_status", public=True),
    "listPlans": Operation("op_list_plans", public=True),
    "createSession": Operation("op_create_session", rate_limit="session_create", idempotent=True),
    "createPipecatSession": Operation("op_create_pipecat_session", rate_limit="session_create"),
    "listSessions": Operation("op_list_sessions"),
    "retrieveSession": Operation("op_retrieve_session"),
    "endSession": Operation("op_end_session"),
    "createAvatar": Operation("op_create_avatar", rate_limit="avatar_create"),
    "listAvatars": Operation("op_list_avatars"),
    "retrieveAvatar": Operation("op_retrieve_avatar"),
    "listModels": Operation("op_list_models"),
    "createRun": Operation("op_create_run", rate_limit="run_create", idempotent=True),
    "listRuns": Operation("op_list_runs"),
    "retrieveRun": Operation("op_retrieve_run"),
    "getRunStatus": Operation("op_get_run_status"),
    "listRunEvents": Operation("op_list_run_events"),
    "cancelRun": Operation("op_cancel_run"),
    "deleteRun": Operation("op_delete_run", rate_limit="run_delete"),
    "listAssets": Operation("op_list_assets"),
    "getAssetContent": Operation("op_get_asset_content"),
    "getUsage": Operation("op_get_usage"),
    "getQuota": Operation("op_get_quota"),
}
#: The operations with a cheaper form for a caller that reads no body (``Platform.call``'s
#: ``reads_body``): the name of the method that answers ``{"id": ...}`` instead of the resource.
_UNREAD: Final = {
    "endSession": "op_end_session_unread",
    "createSession": "op_create_session_unread",
}
#: For each idempotent operation of ``_UNREAD``: the method that renders, from what the cheaper
#: form answered, the body the full form would have answered. A replay must give that body, so
#: the idempotency store keeps this renderer and calls it if the key comes back (a test holds
#: every idempotent unread form to having one).
_REPLAYED: Final = {"createSession": "created_session"}
#: The operation whose parameters ``plain_create`` may read in one pass (compared by identity).
_CREATE_SESSION: Final = OPERATIONS["createSession"]


class PlatformHandedOver(RuntimeError):
    """A call reached a platform whose records were handed over and dropped (``hand_over``).

    Not a contract error: no client of the service can cause it, only code that keeps using a
    run it gave away."""

    def __init__(self, operation_id: str) -> None:
        super().__init__(
            f"{operation_id}: this platform was handed over and its records released, "
            "so it answers no more calls"
        )


class Platform:
    """One simulated service instance. Create with ``Platform.create(config)``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.config: SimConfig = kernel.config
        self.clock = kernel.clock
        self._journal = kernel.journal
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
        self.api_log = ApiLog(kernel.config.history.api_log_size)
        self.admin = PlatformAdmin(self)
        #: Set by ``hand_over``: the records were given to a reader that dropped them.
        self.handed_over = False
        self._max_depth = kernel.config.limits.json_max_depth
        self._limits = kernel.config.limits
        self._session_config = kernel.config.sessions
        #: Each operation's bound method, looked up once rather than by name on every call.
        self._methods: dict[str, Callable[[Caller | None, dict[str, Any]], Any]] = {
            operation_id: getattr(self, operation.method)
            for operation_id, operation in OPERATIONS.items()
        }
        #: The same, with the cheaper form of the operations that have one (``_UNREAD``), for a
        #: caller that reads no body.
        self._unread_methods = self._methods | {
            operation_id: getattr(self, method) for operation_id, method in _UNREAD.items()
        }
        self._replayed: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            operation_id: getattr(self, method) for operation_id, method in _REPLAYED.items()
        }

    @classmethod
    def create(cls, config: SimConfig | None = None) -> Platform:
        return cls(Kernel.create(config))

    def hand_over(self) -> None:
        """Refuse every later call, for good: this platform's records are being given to a reader
        that drops them as it goes (``harness.collect``'s ``release``). An answer after that would
        be read from emptied stores (an idempotent replay would find no session and answer 404),
        so a call raises ``PlatformHandedOver`` rather than answer wrongly."""
        self.handed_over = True

    # -- the door ------------------------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> Caller:
        return self.accounts.authenticate(authorization)

    def new_request_id(self) -> str:
        return self._request_ids.new("request")

    def call(
        self,
        operation_id: str,
        caller: Caller | None,
        params: Params,
        *,
        check: Check | None = None,
        reads_body: bool = True,
    ) -> Outcome:
        """Run one contract operation; raises ``DomainError`` for every refusal.

        ``params`` are the operation's named parameters, or a function that reads them: the
        facade passes its request parser, so a request it cannot read is counted by the rate
        limiter and logged exactly like one the domain refuses (SIM-7). ``check`` is the caller's
        own last check (the facade's schema); it runs once the domain's checks have passed and
        before anything is changed, so the domain's refusal is the one both doors give.

        In order: the values (``sim.values``), an idempotent replay (which the rate limiter does
        not count, GAP-LIM-2), the rate limiter, the operation's checks, ``check``, then the
        change itself; a create whose parameters are plainly fine has its values checked and its
        body read in one pass (``plain_create``, which gives the same answers). The whole call is
        one unit of ``Journal.atomic``: if it fails half-way, nothing it stored, counted against a
        cap or charged remains (GAP-ERR-6).

        ``reads_body=False``: the caller will read no more of the body than its ``id`` (the
        scenario's clients discard what an end answers). An operation with a cheaper form for
        such a caller (``_UNREAD``) then answers ``{"id": ...}`` instead of rendering a resource
        nobody reads; it is the same operation in every other way (checks, changes, records, the
        API log), and every other operation answers its full body as usual.
        """
        if self.handed_over:
            raise PlatformHandedOver(operation_id)
        try:
            operation = OPERATIONS[operation_id]
        except KeyError:
            raise NotFound("route.not_found", f"No operation {operation_id}.") from None
        org_id = caller.org_id if caller is not None else None
        try:
            with self._journal:  # ``journal.atomic()``, which is the journal itself
                outcome = self._call(operation_id, operation, caller, params, check, reads_body)
        except DomainError as error:
            self.api_log.append(self.clock.now, operation_id, org_id, error.code, error.type)
            raise
        self.api_log.append(
            self.clock.now,
            operation_id,
            org_id,
            "replayed" if outcome.replayed else "ok",
            None,
        )
        return outcome

    def _call(
        self,
        operation_id: str,
        operation: Operation,
        caller: Caller | None,
        params: Params,
        check: Check | None,
        reads_body: bool,
    ) -> Outcome:
        # Every create and end comes through here: the steps are written inline, in the order the
        # docstring of ``call`` gives, rather than as a helper call each.
        if caller is None and not operation.public:
            caller = _caller(caller)  # refuses
        limiter = (
            None
            if operation.rate_limit is None or caller is None
            else self._limiters.get(operation.rate_limit)
        )
        refusal: DomainError | None = None
        request: SessionRequest | None = None
        try:  # the parameters (the facade's parser runs here) and their values; a refusal is
            # kept, not raised, so the rate limiter counts the request first
            read = params() if callable(params) else params
            if operation is _CREATE_SESSION:  # most calls: values and body read in one pass
                request = plain_create(read, self._limits, self._session_config, self._max_depth)
            if request is None:
                check_values(read, max_depth=self._max_depth)
        except DomainError as error:
            read, refusal = {}, error
        key = read.get("idempotency_key") if operation.idempotent else None
        digest: bytes | None = None
        if refusal is None and key is not None and caller is not None:
            try:
                # The request's path parameters and body (``lookup`` checks the key first).
                digest = fingerprint(operation_id, (_path_params(read), read.get("body")))
                replay = self.idempotency.lookup(
                    caller.org_id, key, operation_id, None, digest=digest
                )
            except DomainError as error:  # an invalid or reused key: a new request, counted
                refusal = error
            else:
                if replay is not None:  # the original answer again: not a new request
                    seen = limiter.peek(caller.key_id) if limiter is not None else None
                    return Outcome(replay.body, replayed=True, rate=seen)
        rate = limiter.hit(caller.key_id) if limiter is not None and caller is not None else None
        try:
            if refusal is not None:
                raise refusal
            # The operation's checks, the caller's ``check``, then (a ``Prepared``) its change.
            result = (
                (self._methods if reads_body else self._unread_methods)[operation_id](caller, read)
                if request is None or caller is None
                # ``op_create_session`` (or its unread form), with the body read already
                else self.sessions.prepare_create(caller, request, render=reads_body)
            )
            if check is not None:
                check(read)
            if isinstance(result, Prepared):
                result = result.commit()
            if digest is not None and caller is not None and isinstance(result, dict):
                body: Body = result
                if not reads_body and operation_id in self._replayed:  # the body, rendered later
                    body = partial(self._replayed[operation_id], result)
                self._remember(caller.org_id, str(key), operation_id, digest, body)
        except DomainError as error:
            if error.rate is None and rate is not None:
                error.rate = rate
            raise
        if isinstance(result, Outcome):
            return result if rate is None else result._replace(rate=rate)
        # ``Outcome(result, rate=rate)`` without the generated ``__new__``'s frame and keywords.
        return _new_tuple(Outcome, (result, _JSON, False, rate))

    def _remember(
        self, org_id: str, key: str, operation_id: str, digest: bytes, body: Body
    ) -> None:
        """Store an idempotent outcome as part of the operation's unit (undone if it fails;
        no entry existed for the key, or the lookup would have replayed or refused it)."""
        self.kernel.journal.on_undo(lambda: self.idempotency.forget(org_id, key))
        self.idempotency.store(org_id, key, operation_id, None, body, digest=digest)

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

    # -- operations: each parses nothing and delegates to one service --------------------------

    def op_get_status(self, caller: Caller | None, params: dict[str, Any]) -> dict[str, Any]:
        sessions = self.sessions
        return status_body(
            sessions.pool_status(), self.config.scheduler.workers, sessions.faults, self.clock
        )

    def op_list_plans(self, caller: Caller | None, params: dict[str, Any]) -> dict[str, Any]:
        return self.billing.plans()

    def op_create_session(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        return self.sessions.prepare_create(caller, params.get("body"))

    def op_create_session_unread(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        """``op_create_session`` for a caller that reads no body: the same create, answering its
        id (rendering the created session cost about 4 % of a month's session)."""
        return self.sessions.prepare_create(caller, params.get("body"), render=False)

    def created_session(self, answer: dict[str, Any]) -> dict[str, Any]:
        """What ``createSession`` answered, from what its unread form answered (its id)."""
        return self.sessions.created(str(answer["id"]))

    def op_create_pipecat_session(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        return self.sessions.prepare_pipecat(caller, params.get("body"))

    def op_list_sessions(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.sessions.list(
            caller,
            limit=params.get("limit", self.config.limits.page_size_default),
            starting_after=params.get("starting_after"),
            status=params.get("status"),
        )

    def op_retrieve_session(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.sessions.retrieve(caller, params["session_id"])

    def op_end_session(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.sessions.end(caller, params["session_id"])

    def op_end_session_unread(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        """``op_end_session`` for a caller that reads no body: the same end, answering its id
        (rendering the ended session cost about 2 % of a month's session, in instructions)."""
        return self.sessions.end(caller, params["session_id"], render=False)

    def op_create_avatar(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        return self.avatars.prepare_create(
            caller,
            image=params.get("image"),
            filename=params.get("image_filename"),
            content_type=params.get("image_content_type"),
            name=params.get("name"),
        )

    def op_list_avatars(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.avatars.list(
            caller,
            limit=params.get("limit", self.config.limits.avatar_page_size_default),
            starting_after=params.get("starting_after"),
            scope=params.get("scope", "all"),
            q=params.get("q"),
        )

    def op_retrieve_avatar(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.avatars.retrieve(caller, params["avatar_id"])

    def op_list_models(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.list_models(caller)

    def op_create_run(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        return self.runs.prepare_create(caller, params["model_id"], params.get("body"))

    def op_list_runs(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.list(
            caller,
            limit=params.get("limit", self.config.limits.page_size_default),
            starting_after=params.get("starting_after"),
        )

    def op_retrieve_run(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.retrieve(caller, params["run_id"])

    def op_get_run_status(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.status(caller, params["run_id"])

    def op_list_run_events(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.events(
            caller,
            params["run_id"],
            starting_after=params.get("starting_after"),
            limit=params.get("limit", self.config.limits.run_events_page_size_default),
        )

    def op_cancel_run(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.cancel(caller, params["run_id"])

    def op_delete_run(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.runs.delete(caller, params["run_id"])

    def op_list_assets(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        return self.assets.list(
            caller,
            limit=params.get("limit", self.config.limits.page_size_default),
            starting_after=params.get("starting_after"),
        )

    def op_get_asset_content(self, caller: Caller, params: dict[str, Any]) -> Outcome:
        data, media_type = self.assets.content(caller, params["asset_id"])
        return Outcome(body=data, media_type=media_type)

    def op_get_usage(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        caller.require_unrestricted()
        return self.billing.usage(
            caller.org_id,
            period=params.get("period"),
            period_start=params.get("period_start"),
            period_end=params.get("period_end"),
            timezone=params.get("timezone"),
        )

    def op_get_quota(self, caller: Caller, params: dict[str, Any]) -> dict[str, Any]:
        caller.require_unrestricted()
        return self.billing.quota(caller.org_id)

    # -- time ----------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)


def _path_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that name an object (``..._id``), which a fingerprint covers with the body.
    A loop, not a comprehension: every keyed create asks, and a comprehension is one more call."""
    path: dict[str, Any] = {}
    for name in params:
        if name.endswith("_id"):
            path[name] = params[name]
    return path
