"""Who may do what: authentication, the runs scopes, and the wall between organizations.

* ``authentication`` (AUTH-2, AUTH-3, AUTH-6, EP-MODEL-1): every operation but ``GET
  /v1/status`` and ``GET /v1/billing/plans`` answers 401 to a request without a working key (no
  header, not ``Bearer <key>``, an unknown key, an ``emb_`` id, a revoked key), whatever else is
  wrong with it; a working key is never answered 401; the public two answer without a key;
  ``GET /v1/models`` answers 200 to every working key.
* ``scopes`` (AUTH-4, AUTH-5): a ``runs:read`` key lists, retrieves and polls runs and their
  events, and may not create or delete one; a ``runs:write`` key may not read runs, nor
  generate media (a run of a model with media outputs needs both scopes); refusals are 403
  ``api_key.scope_required``; an unrestricted key never gets that refusal.
* ``tenant_isolation`` (AUTH-7, EP-SESS-8, EP-AV-3): a resource of one organization is never
  answered to another's key (read, ended, deleted, listed, replayed, used to start a session);
  such a request is refused 403 or 404, one way per operation (an open point, learned and held).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.calls import Call
from harness.conformance.model.keys import Caller, Org
from harness.conformance.model.readings import Readings
from harness.conformance.model.rules import Verdict, model_rule

__all__ = ["AUTH", "SCOPES", "TENANTS", "Ownership", "judge_auth", "judge_scopes"]

AUTH = model_rule("authentication")
SCOPES = model_rule("scopes")
TENANTS = model_rule("tenant_isolation")

OWNER_READS = model_rule("owner_reads")

PUBLIC = frozenset({"getStatus", "listPlans"})
_PRINTABLE = re.compile(r"[!-~]+")
_OWNER_READS = ("retrieveSession", "retrieveAvatar", "retrieveRun", "getRunStatus", "listRunEvents")
#: Operations on one resource, and the path parameter that names it.
_ON_ONE = {
    "retrieveSession": "session_id",
    "endSession": "session_id",
    "retrieveAvatar": "avatar_id",
    "retrieveRun": "run_id",
    "getRunStatus": "run_id",
    "listRunEvents": "run_id",
    "deleteRun": "run_id",
    "getAssetContent": "asset_id",
}
_RUN_READS = frozenset({"listRuns", "retrieveRun", "getRunStatus", "listRunEvents"})
_SCOPE_CODE = "api_key.scope_required"


@dataclass
class Ownership:
    """Which organization each resource the run has seen belongs to, and the resources both
    organizations were shown (the platform's, such as stock avatars)."""

    owner: dict[str, Org] = field(default_factory=dict)
    shared: set[str] = field(default_factory=set)

    def claim(self, resource_id: str, org: Org) -> None:
        self.owner.setdefault(resource_id, org)

    def foreign(self, resource_id: str, org: Org) -> bool:
        found = self.owner.get(resource_id)
        return found is not None and found != org and resource_id not in self.shared


def _plain(call: Call) -> bool:
    """Whether nothing but the key could be wrong with a request: no query, and no body, or a
    session create every reading accepts (a deployment may judge a bad request before its key)."""
    if call.query or not all(_PRINTABLE.fullmatch(value) for value in call.params.values()):
        return False  # a path a router may not match at all (control characters, spaces)
    if call.operation == "createSession":
        from harness.conformance.model.create_rules import problems_of

        reading = problems_of(call.body, call.idempotency_key)
        return reading.judgeable and not reading.problems and reading.complete
    return not call.exchange.request_body


def judge_auth(call: Call, caller: Caller) -> Iterator[Verdict]:
    exchange = call.exchange
    if call.operation in PUBLIC:
        if call.query or caller.kind in ("known", "stranger", "doubtful"):
            return
        if not call.ok:
            yield Verdict.failed(
                AUTH, exchange,
                f"{call.operation} is public and unauthenticated, yet answered {call.status} "
                f"to a request with {_described(caller)}",
            )  # fmt: skip
        else:
            yield Verdict.passed(AUTH, exchange)
        return
    if caller.kind in ("none", "malformed", "unknown", "embed", "revoked") and _plain(call):
        if call.status != 401:
            yield Verdict.failed(
                AUTH, exchange,
                f"a request with {_described(caller)} answered {call.status}, not 401",
            )  # fmt: skip
        else:
            yield Verdict.passed(AUTH, exchange)
    elif caller.valid:
        if call.status == 401:
            yield Verdict.failed(
                AUTH, exchange, f"the {caller.role} key, which works, was answered 401"
            )
        elif call.operation == "listModels" and call.status != 200:
            yield Verdict.failed(
                AUTH, exchange,
                f"GET /v1/models answered {call.status} to the working {caller.role} key; it "
                "answers 200 to every working key",
            )  # fmt: skip
        else:
            yield Verdict.passed(AUTH, exchange, edge=False)


def _described(caller: Caller) -> str:
    return {
        "none": "no Authorization header",
        "malformed": "an Authorization header that is not Bearer <key>",
        "unknown": "an unknown key",
        "embed": "an emb_ embed id as the key",
        "revoked": "the revoked key",
    }[caller.kind]


def judge_scopes(call: Call, caller: Caller, media: bool | None) -> Iterator[Verdict]:
    """``media``: whether a run create's model has media outputs (``None``: not known)."""
    if not caller.valid:
        return
    exchange = call.exchange
    refused = call.status == 403 and call.code == _SCOPE_CODE
    if caller.unrestricted:
        if refused:
            yield Verdict.failed(
                SCOPES, exchange,
                f"an unrestricted key was refused {_SCOPE_CODE} on {call.operation}",
            )  # fmt: skip
        return
    wanted: bool | None = None  # must it be refused for scope?
    why = ""
    if call.operation in _RUN_READS:
        wanted = not caller.has("runs:read")
        why = "reading runs needs runs:read"
    elif call.operation == "deleteRun" and not caller.has("runs:write"):
        wanted, why = True, "runs:read only reads runs"
    elif call.operation == "createRun":
        if not caller.has("runs:write"):
            wanted, why = True, "creating a run needs runs:write"
        elif media is True and not caller.has("runs:read"):
            wanted, why = True, "generating media needs both runs:read and runs:write"
        # A run of a model without media outputs is not judged for a runs:write key: the seed
        # calls runs "media generation" once, and a model that makes no media may be either.
    if wanted is None:
        return
    if wanted and not refused:
        yield Verdict.failed(
            SCOPES, exchange,
            f"the {caller.role} key's {call.operation} answered {call.status} "
            f"{call.code or ''}; {why}: 403 {_SCOPE_CODE}",
        )  # fmt: skip
    elif not wanted and refused:
        yield Verdict.failed(
            SCOPES, exchange, f"the {caller.role} key was refused {call.operation}; {why}"
        )
    else:
        yield Verdict.passed(SCOPES, exchange)


def judge_foreign_target(
    call: Call, caller: Caller, ownership: Ownership, readings: Readings
) -> Iterator[Verdict]:
    """A request on one resource (by path) that belongs to the other organization."""
    name = _ON_ONE.get(call.operation)
    resource_id = call.params.get(name or "")
    if not resource_id or caller.org is None or not caller.valid:
        return
    if not ownership.foreign(resource_id, caller.org):
        return
    exchange = call.exchange
    if call.ok:
        yield Verdict.failed(
            TENANTS, exchange,
            f"{call.operation} of another organization's {str(name).removesuffix('_id')} answered "
            f"{call.status}",
        )  # fmt: skip
        return
    if call.status in (403, 404) and call.error is not None:
        held = readings.hold("foreign resource", call.status, exchange, call.operation)
        if held is not None:
            yield Verdict.failed(TENANTS, exchange, held)
        else:
            yield Verdict.passed(TENANTS, exchange)
    elif call.status not in (429, 503):
        yield Verdict.failed(
            TENANTS, exchange,
            f"{call.operation} of another organization's resource answered {call.status}, not "
            "403 or 404",
        )  # fmt: skip


def foreign_in_answer(
    call: Call, caller: Caller, ownership: Ownership, resources: list[tuple[str, dict[str, Any]]]
) -> Iterator[Verdict]:
    """Any resource of the other organization inside a success answer to this caller."""
    if not call.ok or caller.org is None or not caller.valid:
        return
    for kind, resource in resources:
        resource_id = resource.get("id")
        if isinstance(resource_id, str) and ownership.foreign(resource_id, caller.org):
            yield Verdict.failed(
                TENANTS, call.exchange,
                f"{call.operation} answered the {caller.role} key another organization's "
                f"{kind} {resource_id}",
            )  # fmt: skip
            return


def judge_owner_read(call: Call, caller: Caller, ownership: Ownership) -> Iterator[Verdict]:
    """A read of one of the caller's organization's resources is answered (runs need a key
    that may read them)."""
    if call.operation not in _OWNER_READS or caller.org is None or not caller.valid:
        return
    name = _ON_ONE[call.operation]
    resource_id = call.params.get(name, "")
    if ownership.owner.get(resource_id) != caller.org:
        return
    if ("run" in name and not caller.has("runs:read")) or call.query:
        return  # a query may name a parameter the deployment calls otherwise
    if call.ok:
        yield Verdict.passed(OWNER_READS, call.exchange)
    elif 400 <= call.status < 500 and call.status != 429:
        yield Verdict.failed(
            OWNER_READS, call.exchange,
            f"{call.operation} of the organization's own {name.removesuffix('_id')} "
            f"{resource_id} answered {call.status}",
        )  # fmt: skip
