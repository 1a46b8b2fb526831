"""A deployment that decides the seed's gaps differently: the real facade behind edits and a
configuration, each choice legal under the seed (HAR-5).

Each ``GapChoice`` names the seed section that leaves the choice open, and carries the edits (or
the ``SimConfig`` change) that make the simulator choose otherwise. ``GAP_VARIANT`` combines them
all; the conformance run must report nothing against it. A test also shows each choice is in
effect (``WITNESSES`` in the test module), so the variant cannot pass by doing nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from tests.conformance.edits import Call, Edits, Reply, objects

#: The codes the seed itself names; every other code may be anything (seed §7: "The complete
#: list of codes: not shown").
SEED_CODES = frozenset(
    {
        "api_key.scope_required",
        "at_capacity",
        "concurrent_sessions",
        "metadata.reserved_key",
        "no_capacity",
        "transport.unsupported",
    }
)
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # SimConfig's default epoch


@dataclass(frozen=True)
class GapChoice:
    name: str
    seed: str  # the seed section that leaves this open
    edits: Edits = field(default_factory=Edits)


def _is_create(call: Call) -> bool:
    return call.method == "POST" and (
        call.path in ("/v1/sessions", "/v1/pipecat/sessions", "/v1/avatars")
        or call.path.startswith("/v1/run/")
    )


# -- success codes ---------------------------------------------------------------------------


def creates_answer_200(call: Call, reply: Reply) -> None:
    if _is_create(call) and reply.status == 201:
        reply.status = 200


# -- run and deletion status names -----------------------------------------------------------

RUN_STATUSES = {
    "queued": "pending",
    "running": "in_progress",
    "succeeded": "completed",
    "failed": "errored",
    "canceled": "cancelled",
}
DELETION_STATUSES = {
    "pending": "accepted",
    "purging": "in_progress",
    "completed": "done",
    "failed": "error",
}


def other_run_statuses(call: Call, reply: Reply) -> None:
    if not call.path.startswith(("/v1/run/", "/v1/runs")):
        return
    body = reply.json()
    for item in objects(body):
        kind, status = item.get("object"), item.get("status")
        if kind in ("run", "run.status") and status in RUN_STATUSES:
            item["status"] = RUN_STATUSES[status]
        elif kind == "run.deletion" and status in DELETION_STATUSES:
            item["status"] = DELETION_STATUSES[status]
    if body is not None:
        reply.set_json(body)


# -- parameter names ---------------------------------------------------------------------------


def _renamed_parameters(path: str, names: dict[str, str]) -> Any:
    """Accept ``names`` (ours -> the facade's) on ``path`` and refuse the facade's own names."""

    def edit(call: Call) -> None:
        if call.method != "GET" or call.path != path:
            return
        pairs = call.query()
        for theirs in names.values():
            if any(name == theirs for name, _ in pairs):
                call.refuse(422, "unprocessable", "unknown_parameter", f"{theirs}?", theirs)
                return
        call.set_query((names.get(name, name), value) for name, value in pairs)

    return edit


def _renamed_events_offset(call: Call) -> None:
    if call.method == "GET" and call.path.startswith("/v1/runs/") and call.path.endswith("/events"):
        pairs = call.query()
        if any(name == "starting_after" for name, _ in pairs):
            call.refuse(422, "unprocessable", "unknown_parameter", "starting_after?", None)
            return
        call.set_query(("starting_after" if n == "after" else n, v) for n, v in pairs)


# -- request rules -------------------------------------------------------------------------------


def worker_token_required(call: Call) -> None:
    if call.method != "POST" or call.path != "/v1/sessions":
        return
    body = call.json()
    transport = body.get("transport") if isinstance(body, dict) else None
    if not isinstance(transport, dict) or transport.get("type") != "livekit":
        return
    if not transport.get("worker_token"):
        call.refuse(422, "unprocessable", "worker_token_missing", "Send a token.", None)


def validation_as_400(call: Call, reply: Reply) -> None:
    error = reply.error()
    if reply.status == 422 and error is not None:
        reply.status = 400
        reply.edit_error(type="invalid_request")


# -- the create rate limit as a token bucket -------------------------------------------------------

BUCKET = 10.0
REFILL_PER_SECOND = 10.0 / 60.0


def _bucket(call: Call) -> tuple[float, str]:
    key = call.header("authorization") or ""
    tokens, at = call.state.setdefault("buckets", {}).get(key, (BUCKET, call.now()))
    tokens = min(BUCKET, tokens + (call.now() - at) * REFILL_PER_SECOND)
    call.state["buckets"][key] = (tokens, call.now())
    return tokens, key


def _rate_headers(reply: Reply, tokens: float) -> None:
    wait = 0 if tokens >= 1 else int((1 - tokens) / REFILL_PER_SECOND) + 1
    reply.set_header("X-RateLimit-Limit", str(int(BUCKET)))
    reply.set_header("X-RateLimit-Remaining", str(int(max(tokens, 0))))
    reply.set_header("X-RateLimit-Reset", str(wait))  # seconds from now, not a Unix time


def token_bucket_gate(call: Call) -> None:
    if call.method != "POST" or call.path != "/v1/sessions":
        return
    tokens, _ = _bucket(call)
    if tokens < 1:
        wait = int((1 - tokens) / REFILL_PER_SECOND) + 1
        call.refuse(429, "rate_limit", "too_many_creates", "Slow down.", None)
        assert call.answer is not None
        call.answer.set_header("Retry-After", str(wait))
        _rate_headers(call.answer, tokens)


def token_bucket_count(call: Call, reply: Reply) -> None:
    if call.method != "POST" or call.path != "/v1/sessions" or call.answer is not None:
        return
    tokens, key = _bucket(call)
    if 200 <= reply.status < 300:
        tokens -= 1  # only accepted creates count
        call.state["buckets"][key] = (tokens, call.now())
    _rate_headers(reply, tokens)


def retry_after_as_date(call: Call, reply: Reply) -> None:
    raw = reply.header("retry-after")
    if raw is not None and raw.isdigit():
        now = EPOCH + timedelta(seconds=call.now())
        reply.set_header("Date", format_datetime(now, usegmt=True))
        later = now + timedelta(seconds=int(raw))
        reply.set_header("Retry-After", format_datetime(later, usegmt=True))


# -- codes, shapes, extras, order --------------------------------------------------------------


def other_error_codes(call: Call, reply: Reply) -> None:
    error = reply.error()
    if error is not None and error.get("code") not in SEED_CODES:
        reply.edit_error(code="e_" + str(error.get("code")).replace(".", "_"))


def other_session_error_shape(call: Call, reply: Reply) -> None:
    body = reply.json()
    changed = False
    for item in objects(body):
        error = item.get("error")
        if item.get("object") == "session" and isinstance(error, dict) and "code" in error:
            item["error"] = {"reason": error["code"], "detail": error.get("message")}
            changed = True
    if changed:
        reply.set_json(body)


#: Fields whose presence the seed does not promise (GAP-NULL-1), by resource: a deployment may
#: leave each out while it has no value instead of writing ``null``. A run's own fields and a run
#: status's ``error`` are not here: the seed says those are always present.
UNSET_OMITTED: dict[str, tuple[str, ...]] = {
    "session": ("started_at", "first_frame_at", "error"),
    "asset": ("deleted_at", "duration_ms", "height", "width", "schema_uri"),
    "run.deletion": ("started_at", "completed_at", "error"),
}


def unset_fields_omitted(call: Call, reply: Reply) -> None:
    body = reply.json()
    changed = False
    for item in list(objects(body)):
        for name in UNSET_OMITTED.get(str(item.get("object")), ()):
            if name in item and item[name] is None:
                del item[name]
                changed = True
    if changed:
        reply.set_json(body)


def extra_fields(call: Call, reply: Reply) -> None:
    body = reply.json()
    if not isinstance(body, dict) or (isinstance(body.get("error"), dict) and len(body) == 1):
        return  # the error envelope stays closed
    for item in objects(body):
        if item.get("object") == "list":
            item["url"] = call.path
        elif isinstance(item.get("object"), str):
            item["region"] = "eu-west-1"
    if "credits_charged" in body:
        body["by_region"] = {"eu-west-1": body["credits_charged"]}
    reply.set_json(body)


def no_replay_header(call: Call, reply: Reply) -> None:
    reply.drop("idempotent-replayed")


def other_order(call: Call, reply: Reply) -> None:
    """Models in reverse catalog order; every object's keys in reverse order."""
    body = reply.json()
    if body is None or not (reply.header("content-type") or "").startswith("application/json"):
        return
    if call.path == "/v1/models" and isinstance(body.get("data"), list):
        body["data"].reverse()

    def reverse(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: reverse(node[k]) for k in reversed(list(node))}
        if isinstance(node, list):
            return [reverse(v) for v in node]
        return node

    reply.body = json.dumps(reverse(body)).encode()


def cancel_elsewhere(call: Call) -> None:
    path = call.path
    if path.startswith("/v1/runs/") and path.endswith("/cancellation"):
        call.scope["path"] = path.removesuffix("/cancellation") + "/cancel"
    elif path.startswith("/v1/runs/") and path.endswith("/cancel"):
        call.scope["path"] = path + "/gone"


def pipecat_field_names(call: Call) -> None:
    if call.method == "POST" and call.path == "/v1/pipecat/sessions":
        body = call.json()
        names = {"idle_timeout": "idle_timeout_seconds", "max_duration": "max_duration_seconds"}
        if isinstance(body, dict):
            call.set_json({names.get(k, k): v for k, v in body.items()})


GAP_CHOICES: tuple[GapChoice, ...] = (
    GapChoice("creates answer 200", "§4 POST /v1/sessions: the success status code is not shown",
              Edits(response=(creates_answer_200,))),
    GapChoice("other run and deletion status names",
              "§3 Runs: run status values and run deletion status values are not shown",
              Edits(response=(other_run_statuses,))),
    GapChoice("session filter named state", "§4 GET /v1/sessions: the filter names are not shown",
              Edits(request=(_renamed_parameters("/v1/sessions", {"state": "status"}),))),
    GapChoice("avatar filters named visibility and search",
              "§4 GET /v1/avatars: the names of the two filters are not shown",
              Edits(request=(_renamed_parameters("/v1/avatars", {"visibility": "scope",
                                                                 "search": "q"}),))),
    GapChoice("run events offset named after",
              "§4 GET /v1/runs/{run_id}/events: the query parameter names are not shown",
              Edits(request=(_renamed_events_offset,))),
    GapChoice("usage timezone named tz", "§4 GET /v1/usage: the timezone's name is not shown",
              Edits(request=(_renamed_parameters("/v1/usage", {"tz": "timezone"}),))),
    GapChoice("worker_token required",
              "§2 Transport config: the livekit fields carry no optional/required marking",
              Edits(request=(worker_token_required,))),
    GapChoice("validation refused with 400",
              "§7: type maps only roughly to the status; 400 invalid_request for a bad request",
              Edits(response=(validation_as_400,))),
    GapChoice("create rate limit as a token bucket of 10 per minute, counting accepted creates",
              "§8: 10 requests per minute per key; the window's shape and what counts are not "
              "shown (rule 6)",
              Edits(request=(token_bucket_gate,), response=(token_bucket_count,),
                    config={"limits.rate.session_creates_per_window": None})),
    GapChoice("Retry-After as an HTTP date", "§8 rule 2: a 429 carries Retry-After (its form "
              "is HTTP's: seconds or a date)", Edits(response=(retry_after_as_date,))),
    GapChoice("other error codes", "§7: the complete list of codes is not shown",
              Edits(response=(other_error_codes,))),
    GapChoice("another session error shape", "§2 Session: error's shape is not shown",
              Edits(response=(other_session_error_shape,))),
    GapChoice("extra fields", "§9: additive-only; responses may grow",
              Edits(response=(extra_fields,))),
    GapChoice("no Idempotent-Replayed header", "§8 rule 3: a replay returns the original "
              "response; no marker is named", Edits(response=(no_replay_header,))),
    GapChoice("run cancel at /cancellation", "§4 Runs: cancel's method and path are not shown",
              Edits(request=(cancel_elsewhere,))),
    GapChoice("pipecat fields named idle_timeout and max_duration",
              "§4 POST /v1/pipecat/sessions: the other request fields' names are not shown",
              Edits(request=(pipecat_field_names,))),
    GapChoice("plan clamp of 1800 s, default quality lite, 30 run creates per minute",
              "§8 rules 5 and 6: plan clamps and other endpoints' limits are not shown; "
              "§4: quality has no stated default",
              Edits(config={"billing.plans.enterprise.max_session_duration_seconds": 1800,
                            "sessions.default_quality": "lite",
                            "limits.rate.run_creates_per_window": 30})),
    GapChoice("unset fields omitted instead of null",
              "§2 Session: started_at, first_frame_at and error are set by events or on failure, "
              "never said to be always present; §2 Asset and Run deletion list fields without "
              "promising their presence", Edits(response=(unset_fields_omitted,))),
    GapChoice("other ordering", "§4 GET /v1/models and JSON objects: no order is stated",
              Edits(response=(other_order,))),
)  # fmt: skip


def combined(choices: tuple[GapChoice, ...] = GAP_CHOICES) -> Edits:
    """Every choice at once; ordering edits (which re-serialise) last."""
    request = tuple(edit for choice in choices for edit in choice.edits.request)
    response = tuple(edit for choice in choices for edit in choice.edits.response)
    config: dict[str, Any] = {}
    for choice in choices:
        config.update(choice.edits.config)
    return Edits(request=request, response=response, config=config)


GAP_VARIANT = combined()
