"""The request pipeline: the one door every contract operation goes through (SIM-7).

The HTTP facade and the direct Python API both call ``Pipeline.call`` (as ``Platform.call``), so
driving a scenario either way gives identical records. The rules that cross every operation live
here, once, in the order ``call`` gives: the request's values (``sim.values``), an idempotent
replay (GAP-LIM-2), the per-key rate limits (GAP-LIM-1), the operation itself
(``sim.operations``), the caller's own last check, the change, the idempotent outcome stored,
and the API log. The whole call is one unit of ``Journal.atomic``: if it fails half-way, nothing
it stored, counted against a cap or charged remains (GAP-ERR-6).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from sim import tuples
from sim.accounts import Caller
from sim.apilog import ApiLog
from sim.clock import Clock
from sim.config import LimitsConfig
from sim.errors import AuthenticationFailed, DomainError, NotFound
from sim.idempotency import Body, IdempotencyStore, fingerprint
from sim.journal import Journal, Prepared
from sim.operations import JSON, OPERATIONS, REPLAYED, UNREAD, Operation, Operations, Outcome
from sim.ratelimit import RateLimiter
from sim.values import check_values

__all__ = ["Check", "Params", "Pipeline", "PlatformHandedOver"]

#: An operation's named parameters, or a parser producing them (see ``Pipeline.call``).
Params = dict[str, Any] | Callable[[], dict[str, Any]]

#: A caller's last check of the parameters, run after the domain's (see ``Pipeline.call``).
Check = Callable[[dict[str, Any]], None]

#: An operation's method: the caller and the request's named parameters in, its answer out.
Method = Callable[[Caller | None, dict[str, Any]], Any]


class Route(NamedTuple):
    """How the pipeline runs one operation, looked up once per call: the declaration
    (``sim.operations.Operation``) bound to this platform's methods and limiter."""

    operation: Operation
    method: Method  # the full form
    unread: Method  # the form for a caller that reads no body (the full one if it has none)
    reads: Callable[[dict[str, Any]], dict[str, Any] | None] | None  # ``Operation.reads``
    limiter: RateLimiter | None  # the bucket of ``Operation.rate_limit``, if it has a limit
    replayed: Callable[[dict[str, Any]], dict[str, Any]] | None  # ``sim.operations.REPLAYED``


class PlatformHandedOver(RuntimeError):
    """A call reached a platform whose records were handed over and dropped (``hand_over``).

    Not a contract error: no client of the service can cause it, only code that keeps using a
    run it gave away."""

    def __init__(self, operation_id: str) -> None:
        super().__init__(
            f"{operation_id}: this platform was handed over and its records released, "
            "so it answers no more calls"
        )


class Pipeline:
    """Runs each call through the cross-cutting rules, then its operation."""

    def __init__(
        self,
        operations: Operations,
        *,
        clock: Clock,
        journal: Journal,
        limits: LimitsConfig,
        idempotency: IdempotencyStore,
        api_log: ApiLog,
    ) -> None:
        self._clock = clock
        self._journal = journal
        self._max_depth = limits.json_max_depth
        self.idempotency = idempotency
        self.api_log = api_log
        limiters = _limiters(clock, limits)
        #: Set by ``Platform.hand_over``: the records were given to a reader that dropped them.
        self.handed_over = False
        self._routes: dict[str, Route] = {}
        for operation_id, operation in OPERATIONS.items():
            method = getattr(operations, operation.method)
            unread = UNREAD.get(operation_id)
            replayed = REPLAYED.get(operation_id)
            self._routes[operation_id] = Route(
                operation,
                method,
                method if unread is None else getattr(operations, unread),
                None if operation.reads is None else getattr(operations, operation.reads),
                None if operation.rate_limit is None else limiters.get(operation.rate_limit),
                None if replayed is None else getattr(operations, replayed),
            )

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

        An operation that reads its parameters itself (``Operation.reads``) does so before the
        rate limit counts the request; when it answers, its answer is what the operation's
        method takes and the values need no other check (``check_values``).

        ``reads_body=False``: the caller will read no more of the body than its ``id``. An
        operation with an unread form (``sim.operations.UNREAD``) then answers ``{"id": ...}``;
        every other operation answers its full body as usual.
        """
        if self.handed_over:
            raise PlatformHandedOver(operation_id)
        try:
            route = self._routes[operation_id]
        except KeyError:
            raise NotFound("route.not_found", f"No operation {operation_id}.") from None
        org_id = caller.org_id if caller is not None else None
        try:
            with self._journal:  # ``journal.atomic()``, which is the journal itself
                outcome = self._call(operation_id, route, caller, params, check, reads_body)
        except DomainError as error:
            self.api_log.append(self._clock.now, operation_id, org_id, error.code, error.type)
            raise
        outcome_code = "replayed" if outcome.replayed else "ok"
        self.api_log.append(self._clock.now, operation_id, org_id, outcome_code, None)
        return outcome

    def _call(
        self,
        operation_id: str,
        route: Route,
        caller: Caller | None,
        params: Params,
        check: Check | None,
        reads_body: bool,
    ) -> Outcome:
        operation = route.operation
        if caller is None and not operation.public:
            raise AuthenticationFailed("api_key.missing", "Send `Authorization: Bearer <key>`.")
        limiter = None if caller is None else route.limiter
        refusal: DomainError | None = None
        taken: dict[str, Any] | None = None
        try:  # the parameters (the facade's parser runs here) and their values; a refusal is
            # kept, not raised, so the rate limiter counts the request first
            read = params() if callable(params) else params
            if route.reads is not None:
                taken = route.reads(read)
            if taken is None:
                check_values(read, max_depth=self._max_depth)
                taken = read
        except DomainError as error:
            read, taken, refusal = {}, {}, error
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
            result = (route.method if reads_body else route.unread)(caller, taken)
            if check is not None:
                check(read)
            if isinstance(result, Prepared):
                result = result.commit()
            if digest is not None and caller is not None and isinstance(result, dict):
                body: Body = result
                if not reads_body and route.replayed is not None:  # the body, rendered later
                    body = partial(route.replayed, result)
                self._remember(caller.org_id, str(key), operation_id, digest, body)
        except DomainError as error:
            if error.rate is None and rate is not None:
                error.rate = rate
            raise
        if isinstance(result, Outcome):
            return result if rate is None else result._replace(rate=rate)
        return tuples.new(Outcome, (result, JSON, False, rate))

    def _remember(
        self, org_id: str, key: str, operation_id: str, digest: bytes, body: Body
    ) -> None:
        """Store an idempotent outcome as part of the operation's unit (undone if it fails;
        no entry existed for the key, or the lookup would have replayed or refused it)."""
        self._journal.on_undo(lambda: self.idempotency.forget(org_id, key))
        self.idempotency.store(org_id, key, operation_id, None, body, digest=digest)


def _limiters(clock: Clock, limits: LimitsConfig) -> dict[str, RateLimiter]:
    """One sliding-window limiter per rate-limit bucket that has a limit (GAP-LIM-1)."""
    rate = limits.rate
    buckets = {
        "session_create": rate.session_creates_per_window,
        "run_create": rate.run_creates_per_window,
        "avatar_create": rate.avatar_creates_per_window,
        "run_delete": rate.run_deletes_per_window,
        "read": rate.reads_per_window,  # every authenticated read, one bucket (off by default)
    }
    return {
        name: RateLimiter(clock, name, limit, rate.window_seconds)
        for name, limit in buckets.items()
        if limit is not None
    }


def _path_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that name an object (``..._id``), which a fingerprint covers with the
    body."""
    return {name: value for name, value in params.items() if name.endswith("_id")}
