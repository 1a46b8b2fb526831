"""The contract operations: each parses nothing and delegates to one service.

``OPERATIONS`` says how the request pipeline (``sim.pipeline``) treats each operation, by its
operationId: which method of ``Operations`` serves it, whether it is public, its rate-limit
bucket, whether it honours ``Idempotency-Key`` and whether it reads its parameters itself. A
method takes the caller and the request's named parameters and answers a JSON body, an
``Outcome`` or a ``Prepared`` change (the pipeline commits it once every check has passed).

An operation may read its parameters in one pass before the rate limit counts the request
(``Operation.reads``): the reader answers the parameters its method takes when the values are
certainly fine, or ``None``, and then the pipeline checks them (``sim.values``) and the method
reads them as usual. ``createSession`` reads a plain body into its request so (``plain_create``,
a fast path beside its reference: ``make bench`` prints what it saves a month).

Two operations also have an unread form (``UNREAD``), a fast path for a caller that reads no
more of the body than its ``id`` (the scenario's clients): it answers ``{"id": ...}`` instead of
rendering a resource nobody reads, and is the same operation in every other way. Its reference
is the full form (``make bench`` prints what the unread forms save a month). A replay of an
idempotent operation must give the full body, so such an operation names the method that
renders it from the unread answer (``REPLAYED``), and the idempotency store keeps that renderer
until the key comes back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from sim.accounts import Caller
from sim.errors import RateSnapshot
from sim.journal import Prepared
from sim.sessions.rollup import status_body
from sim.sessions.validation import plain_create

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = ["JSON", "OPERATIONS", "REPLAYED", "UNREAD", "Operation", "Operations", "Outcome"]

JSON: Final = "application/json"


class Outcome(NamedTuple):
    """What one operation produced: a JSON body (or bytes) and what the headers need."""

    body: dict[str, Any] | bytes
    media_type: str = JSON
    replayed: bool = False
    rate: RateSnapshot | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """How the pipeline treats one contract operation (looked up by its operationId)."""

    method: str  # name of the ``Operations`` method that serves it
    public: bool = False
    rate_limit: str | None = None  # name of the limiter bucket
    idempotent: bool = False  # honours Idempotency-Key
    #: Name of the ``Operations`` method that reads the parameters in one pass, if any: it
    #: answers what ``method`` takes, or ``None`` for the general path (see the module).
    reads: str | None = None


OPERATIONS: Final[dict[str, Operation]] = {
    "getStatus": Operation("op_get_status", public=True),
    "listPlans": Operation("op_list_plans", public=True),
    "createSession": Operation(
        "op_create_session",
        rate_limit="session_create",
        idempotent=True,
        reads="read_create_session",
    ),
    "createPipecatSession": Operation("op_create_pipecat_session", rate_limit="session_create"),
    "listSessions": Operation("op_list_sessions", rate_limit="read"),
    "retrieveSession": Operation("op_retrieve_session", rate_limit="read"),
    "endSession": Operation("op_end_session"),
    "createAvatar": Operation("op_create_avatar", rate_limit="avatar_create"),
    "listAvatars": Operation("op_list_avatars", rate_limit="read"),
    "retrieveAvatar": Operation("op_retrieve_avatar", rate_limit="read"),
    "listModels": Operation("op_list_models", rate_limit="read"),
    "createRun": Operation("op_create_run", rate_limit="run_create", idempotent=True),
    "listRuns": Operation("op_list_runs", rate_limit="read"),
    "retrieveRun": Operation("op_retrieve_run", rate_limit="read"),
    "getRunStatus": Operation("op_get_run_status", rate_limit="read"),
    "listRunEvents": Operation("op_list_run_events", rate_limit="read"),
    "cancelRun": Operation("op_cancel_run"),
    "deleteRun": Operation("op_delete_run", rate_limit="run_delete"),
    "listAssets": Operation("op_list_assets", rate_limit="read"),
    "getAssetContent": Operation("op_get_asset_content", rate_limit="read"),
    "getUsage": Operation("op_get_usage", rate_limit="read"),
    "getQuota": Operation("op_get_quota", rate_limit="read"),
}
#: The operations with an unread form: the method that answers ``{"id": ...}``.
UNREAD: Final = {
    "endSession": "op_end_session_unread",
    "createSession": "op_create_session_unread",
}
#: For each idempotent operation of ``UNREAD``: the method that renders, from what the unread
#: form answered, the body the full form would have answered.
REPLAYED: Final = {"createSession": "created_session"}


class Operations:
    """The contract operations of one platform, one method each."""

    def __init__(self, platform: Platform) -> None:
        self.sessions = platform.sessions
        self.avatars = platform.avatars
        self.runs = platform.runs
        self.assets = platform.assets
        self.billing = platform.billing
        self.config = platform.config
        self.settings = platform.kernel.settings
        self.clock = platform.clock

    def op_get_status(self, caller: Caller | None, params: dict[str, Any]) -> dict[str, Any]:
        sessions = self.sessions
        return status_body(
            sessions.pool_status(), self.config.scheduler.workers, sessions.faults, self.clock
        )

    def op_list_plans(self, caller: Caller | None, params: dict[str, Any]) -> dict[str, Any]:
        return self.billing.plans()

    def read_create_session(self, params: dict[str, Any]) -> dict[str, Any] | None:
        """A create's parameters with its body read into its request, when they are plainly fine
        (``plain_create``); ``None`` otherwise. ``prepare_create`` takes a request as read."""
        request = plain_create(params, self.settings)
        return None if request is None else {"body": request}

    def op_create_session(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        return self.sessions.prepare_create(caller, params.get("body"))

    def op_create_session_unread(self, caller: Caller, params: dict[str, Any]) -> Prepared:
        """``op_create_session`` for a caller that reads no body: the same create, answering its
        id."""
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
        """``op_end_session`` for a caller that reads no body: the same end, answering its id."""
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
