"""Deliberate contract violations, one (at least) per conformance check (HAR-6).

Each ``Mutation`` is a small edit of the real facade's requests or responses (or of its
configuration) and names the check that must report it. ``drive`` names the scenario checks whose
traffic reaches the fault when the meant check only judges responses. The harness has never seen
these implementations: it meets them only through the ``Target``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.conformance.checks import CHECKS
from tests.conformance.edits import Call, Edits, Keys, Reply, objects

Edit = Callable[[Call, Reply], None]


@dataclass(frozen=True)
class Mutation:
    name: str
    caught_by: str
    edits: Edits
    drive: tuple[str, ...] = ()
    api_key: Callable[[Keys], str] | None = None

    @property
    def fuzz(self) -> bool:
        """Whether only fuzzed traffic reaches the fault (the meant check is schemathesis's)."""
        return CHECKS[self.caught_by].kind == "fuzz"


def _on(method: str, prefix: str, suffix: str = "") -> Callable[[Call], bool]:
    return lambda c: c.method == method and c.path.startswith(prefix) and c.path.endswith(suffix)


def _each(
    kind: str, change: Callable[[dict[str, Any]], None], where: Callable[[Call], bool]
) -> Edit:
    """Apply ``change`` to every object of ``kind`` (by ``object``) in answers ``where`` holds."""

    def edit(call: Call, reply: Reply) -> None:
        body = reply.json()
        if not where(call) or body is None:
            return
        for item in list(objects(body)):
            if item.get("object") == kind:
                change(item)
        reply.set_json(body)

    return edit


def _body(change: Callable[[Any], Any], where: Callable[[Call], bool]) -> Edit:
    def edit(call: Call, reply: Reply) -> None:
        body = reply.json()
        if where(call) and 200 <= reply.status < 300 and body is not None:
            reply.set_json(change(body))

    return edit


def _set(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda item: item.update(fields)


def _drop(*names: str) -> Callable[[Any], Any]:
    def change(item: Any) -> Any:
        for name in names:
            item.pop(name, None)
        return item

    return change


def _error(where: Callable[[Call, Reply], bool], **fields: Any) -> Edit:
    def edit(call: Call, reply: Reply) -> None:
        if reply.error() is not None and where(call, reply):
            reply.edit_error(**fields)

    return edit


def _as_key(role: str, target: Callable[[Keys], str]) -> Callable[[Call], None]:
    """Requests with the key of ``role`` are served as if made with ``target(keys)``."""

    def edit(call: Call) -> None:
        if call.header("authorization") == f"Bearer {call.keys[role]}":
            call.set_header("authorization", f"Bearer {target(call.keys)}")

    return edit


def _bearer(predicate: Callable[[str], bool]) -> Callable[[Call], None]:
    """Requests whose bearer value satisfies ``predicate`` are served as the unrestricted key."""

    def edit(call: Call) -> None:
        header = call.header("authorization") or ""
        if header.startswith("Bearer ") and predicate(header.removeprefix("Bearer ")):
            call.set_header("authorization", f"Bearer {call.keys['unrestricted']}")

    return edit


def _query(change: Callable[[list[tuple[str, str]]], list[tuple[str, str]]], path: str) -> Any:
    def edit(call: Call) -> None:
        if call.method == "GET" and call.path.startswith(path):
            call.set_query(change(call.query()))

    return edit


def _request_json(change: Callable[[Any], Any], method: str, path: str) -> Any:
    def edit(call: Call) -> None:
        body = call.json()
        if call.method == method and call.path == path and isinstance(body, dict):
            call.set_json(change(body))

    return edit


def _status(code: int, where: Callable[[Call], bool]) -> Edit:
    def edit(call: Call, reply: Reply) -> None:
        if where(call):
            reply.status = code

    return edit


def _header(name: str, value: str | None, where: Callable[[Call], bool]) -> Edit:
    def edit(call: Call, reply: Reply) -> None:
        if where(call):
            if value is None:
                reply.drop(name)
            else:
                reply.set_header(name, value)

    return edit


# -- faults that need a little more than a field edit ------------------------------------------


def timeouts_ignored(field: str, requested: int, used: int) -> Edits:
    """Sessions created asking ``field`` = ``requested`` are served with ``used``, and every
    answer about them still says ``requested``."""

    def request(call: Call) -> None:
        body = call.json()
        posted = call.method == "POST" and call.path == "/v1/sessions"
        if posted and isinstance(body, dict) and body.get(field) == requested:
            call.set_json({**body, field: used})
            call.notes["ignored"] = True

    def response(call: Call, reply: Reply) -> None:
        ignored: set[str] = call.state.setdefault("ignored", set())
        body = reply.json()
        sessions = [s for s in objects(body) if s.get("object") == "session"]
        if call.notes.get("ignored"):
            ignored.update(str(s.get("id")) for s in sessions)
        for session in sessions:
            if session.get("id") in ignored:
                session[field] = requested
        if sessions:
            reply.set_json(body)

    return Edits(request=(request,), response=(response,))


def replayed_new_id(call: Call, reply: Reply) -> None:
    body = reply.json()
    if reply.header("idempotent-replayed") and isinstance(body, dict):
        body["id"] = "sess_01ZZZZZZZZZZZZZZZZZZZZZZZZ"
        reply.set_json(body)


def keys_never_expire(call: Call) -> None:
    """Idempotency keys are remembered forever: a reuse with another body is 409 at any age."""
    key = call.header("idempotency-key")
    if call.method != "POST" or call.path != "/v1/sessions" or not key:
        return
    seen: dict[str, bytes] = call.state.setdefault("idempotency", {})
    if key in seen and seen[key] != call.body:
        call.refuse(409, "conflict", "idempotency_key.reused", "Key reused.", "Idempotency-Key")
        return
    seen[key] = call.body


def long_keys_dropped(call: Call) -> None:
    key = call.header("idempotency-key")
    if key is not None and len(key) > 255:
        call.scope["headers"] = [
            (k, v) for k, v in call.scope["headers"] if k.lower() != b"idempotency-key"
        ]


def reserved_keys_dropped(body: Any) -> Any:
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        body["metadata"] = {
            k: v for k, v in metadata.items()
            if not k.startswith("_avatar.") or k == "_avatar.debug_record"
        }  # fmt: skip
    return body


def default_idle_60(body: Any) -> Any:
    return body if "idle_timeout_seconds" in body else {**body, "idle_timeout_seconds": 60}


def idle_clamped(body: Any) -> Any:
    idle = body.get("idle_timeout_seconds")
    return {**body, "idle_timeout_seconds": 600} if isinstance(idle, int) and idle > 600 else body


def _without_zero_limit(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A page size of 0 is neither refused nor clamped to 1: the default page answers."""
    return [(n, v) for n, v in pairs if not (n == "limit" and v == "0")]


def max_duration_clamped(body: Any) -> Any:
    asked = body.get("max_duration_seconds")
    too_long = isinstance(asked, int) and asked > 3600
    return {**body, "max_duration_seconds": 3600} if too_long else body


def big_metadata_dropped(body: Any) -> Any:
    """Metadata over 8 KB is silently dropped instead of refused."""
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and len(str(metadata)) > 8192:
        return {**body, "metadata": {}}
    return body


def unsupported_as_422(call: Call, reply: Reply) -> None:
    error = reply.error()
    if error is not None and error.get("code") == "transport.unsupported":
        reply.status = 422
        reply.edit_error(type="unprocessable")


def canceled_later_running(call: Call, reply: Reply) -> None:
    """A canceled session shows running to every later read of it."""
    canceled: set[str] = call.state.setdefault("canceled", set())
    body = reply.json()
    changed = False
    for session in objects(body):
        if session.get("object") != "session":
            continue
        if session.get("status") == "canceled":
            if call.method == "GET" and session.get("id") in canceled:
                session["status"] = "running"
                changed = True
            canceled.add(str(session.get("id")))
    if changed:
        reply.set_json(body)


def by_model_frozen(call: Call, reply: Reply) -> None:
    """Each model's by_model slice stays at the first value shown: later charges are lost."""
    body = reply.json()
    if call.path != "/v1/usage" or not isinstance(body, dict):
        return
    first: dict[str, Any] = call.state.setdefault("by_model", {})
    by_model = body.get("by_model") or {}
    body["by_model"] = {model: first.setdefault(model, value) for model, value in by_model.items()}
    reply.set_json(body)


def fitted_avatar_flips(call: Call, reply: Reply) -> None:
    """A customer avatar shows the other outcome of fitting (ready for failed, failed for ready)
    the first time it is read fitted, then its own."""
    body = reply.json()
    if call.method != "GET" or not call.path.startswith("/v1/avatars/") or not body:
        return
    flipped: set[str] = call.state.setdefault("flipped", set())
    status = body.get("status")
    if status in ("ready", "failed") and not body.get("is_demo") and body["id"] not in flipped:
        flipped.add(body["id"])
        body["status"] = "failed" if status == "ready" else "ready"
        reply.set_json(body)


def bearer_optional(call: Call) -> None:
    """A key sent without the Bearer scheme is taken as if it had it."""
    header = call.header("authorization") or ""
    if header.startswith("sk_live_"):
        call.set_header("authorization", f"Bearer {header}")


def _without_param(name: str, longer_than: int = -1) -> Callable[[list[tuple[str, str]]], Any]:
    return lambda pairs: [(n, v) for n, v in pairs if n != name or len(v) <= longer_than]


def half_window_accepted(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    names = {n for n, _ in pairs}
    if len(names & {"period_start", "period_end"}) == 1:
        return [(n, v) for n, v in pairs if n not in ("period_start", "period_end")]
    return pairs


def default_page_of_3(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return pairs if any(n == "limit" for n, _ in pairs) else [*pairs, ("limit", "3")]


def rewrite_path(where: Callable[[Call], bool], suffix: str) -> Callable[[Call], None]:
    def edit(call: Call) -> None:
        if where(call):
            call.scope["path"] = call.path + suffix

    return edit


def events_reversed(call: Call, reply: Reply) -> None:
    body = reply.json()
    if call.path.endswith("/events") and isinstance(body, dict) and body.get("data"):
        body["data"].reverse()
        reply.set_json(body)


def deleted_runs_hidden(call: Call, reply: Reply) -> None:
    body = reply.json()
    if call.method == "GET" and call.path == "/v1/runs" and isinstance(body, dict):
        body["data"] = [r for r in body.get("data", []) if not r.get("deleted_at")]
        reply.set_json(body)


def busy_yet_made(call: Call, reply: Reply) -> None:
    """A create made during a list walk is answered 503 at_capacity, although the session was
    made: a refused create that is stored anyway."""
    body = call.json()
    transport = body.get("transport") if isinstance(body, dict) else None
    room = transport.get("room_name") if isinstance(transport, dict) else None
    if (
        call.method == "POST"
        and call.path == "/v1/sessions"
        and reply.status == 201
        and (isinstance(room, str) and room.startswith("conformance-walk"))
    ):
        request_id = reply.header("x-request-id") or "req_0"
        reply.status = 503
        reply.set_header("retry-after", "1")
        reply.set_json({"error": {"type": "service_unavailable", "code": "at_capacity",
                                  "message": "busy", "param": None,
                                  "request_id": request_id}})  # fmt: skip


def deleted_run_keeps_outputs(call: Call, reply: Reply) -> None:
    """A deleted run still answers its outputs."""
    deleted: set[str] = call.state.setdefault("deleted", set())
    if call.method == "DELETE" and call.path.startswith("/v1/runs/") and reply.status == 202:
        deleted.add(call.path.rsplit("/", 1)[-1])
    body = reply.json()
    if call.method == "GET" and call.path.rsplit("/", 1)[-1] in deleted and isinstance(body, dict):
        body["outputs"] = [{"modality": "text", "role": "output", "type": "text", "text": "kept"}]
        reply.set_json(body)


def no_retry_after_on_cap(call: Call, reply: Reply) -> None:
    """A cap refusal without Retry-After (every 429 carries one, the seed's limits rule 2)."""
    error = reply.error()
    if error is not None and error.get("code") == "concurrent_sessions":
        reply.drop("retry-after")


def pro_not_offered(call: Call) -> None:
    """A plan that refuses a quality tier (every tier is a request value on every plan; only
    the max-duration clamp is plan-specific)."""
    body = call.json()
    posted = call.method == "POST" and call.path == "/v1/sessions" and isinstance(body, dict)
    if posted and body.get("quality") == "pro":
        message = "Quality pro is not available on this organization's plan."
        call.refuse(403, "permission", "plan.quality_unavailable", message, "quality")


def run_reads_need_no_key(call: Call) -> None:
    if (
        call.method == "GET"
        and call.path.startswith("/v1/runs")
        and not call.header("authorization")
    ):
        call.set_header("authorization", f"Bearer {call.keys['unrestricted']}")


def by_model_over_total(body: Any) -> Any:
    body["by_model"] = {"sim/echo-text": int(body.get("credits_charged", 0)) + 1}
    return body


def quota_server_error(call: Call, reply: Reply) -> None:
    if call.path == "/v1/billing/quota" and reply.status == 200:
        reply.status = 500
        request_id = reply.header("x-request-id")
        reply.set_json({"error": {"type": "internal", "code": "internal_error", "message": "boom",
                                  "param": None, "request_id": request_id}})  # fmt: skip


def _epoch(value: str) -> int:
    return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())


def _when_set(name: str, change: Callable[[Any], Any]) -> Callable[[dict[str, Any]], None]:
    """Rewrite ``name`` of a resource with ``change`` once it has a value."""

    def edit(item: dict[str, Any]) -> None:
        if item.get(name) is not None:
            item[name] = change(item[name])

    return edit


def _when_unset(
    name: str, value: Any = None, drop: bool = False
) -> Callable[[dict[str, Any]], None]:
    """Leave out (``drop``) or replace with ``value`` a field that has no value yet."""

    def edit(item: dict[str, Any]) -> None:
        if name in item and item[name] is None:
            if drop:
                del item[name]
            else:
                item[name] = value

    return edit


def alias(keys: Keys) -> str:
    """A key of another form than sk_live_ that the mutant accepts for the unrestricted one."""
    return "tok_" + keys["unrestricted"].removeprefix("sk_live_")


_SESSIONS = _on("POST", "/v1/sessions")
_ANY: Callable[[Call], bool] = lambda c: True  # noqa: E731
_PLANS = _on("GET", "/v1/billing/plans")

MUTATIONS: tuple[Mutation, ...] = (
    # -- the error envelope and headers ---------------------------------------------------------
    Mutation("extra_envelope_field", "error_envelope_closed",
             Edits(response=(_error(lambda c, r: True, doc_url="https://docs.example/e"),)),
             drive=("bad_keys",)),
    Mutation("wrong_error_type", "error_type_matches_status",
             Edits(response=(_error(lambda c, r: r.status == 409, type="unprocessable"),)),
             drive=("idempotent_creates",)),
    Mutation("drop_request_id", "request_id_echoed",
             Edits(response=(_header("x-request-id", None, _on("GET", "/v1/models")),)),
             drive=("bad_keys",)),
    Mutation("success_request_id_unprefixed", "request_id_echoed",
             Edits(response=(_header("x-request-id", "r-1", _on("GET", "/v1/models")),)),
             drive=("list_probe",)),
    Mutation("request_id_mismatch", "request_id_echoed",
             Edits(response=(_error(lambda c, r: True, request_id="req_00000000000000"),)),
             drive=("bad_keys",)),
    Mutation("camel_case_code", "error_code_format",
             Edits(response=(_error(lambda c, r: r.status == 401, code="ApiKeyInvalid"),)),
             drive=("bad_keys",)),
    Mutation("drop_ratelimit_remaining", "rate_limit_headers",
             Edits(response=(_header("x-ratelimit-remaining", None, _SESSIONS),)),
             drive=("session_lifecycle",)),
    Mutation("drop_retry_after", "retry_after_present",
             Edits(response=(_header("retry-after", None, _ANY),)),
             drive=("rate_limit_bursts",)),
    Mutation("retry_after_in_words", "retry_after_present",
             Edits(response=(_header("retry-after", "a minute", _ANY),)),
             drive=("cap_probe",)),
    # -- resources as the seed describes them -----------------------------------------------------
    Mutation("avatar_ids_unprefixed", "ids_prefixed",
             Edits(response=(_each("avatar", lambda a: a.update(id="avatar-" + a["id"][3:]),
                                   _on("GET", "/v1/avatars")),)),
             drive=("list_probe",)),
    Mutation("local_time_stamps", "timestamps_utc",
             Edits(response=(_each("session", lambda s: s.update(
                 created_at=s["created_at"].replace("Z", "+02:00")), _ANY),)),
             drive=("session_lifecycle",)),
    Mutation("status_as_text", "json_bodies",
             Edits(response=(_header("content-type", "text/plain", _on("GET", "/v1/status")),)),
             drive=("public_endpoints",)),
    Mutation("worker_token_echoed", "worker_token_hidden",
             Edits(response=(_each("session", lambda s: s["transport"].update(
                 worker_token="conformance-worker-token-7f3a9c"), _SESSIONS),)),
             drive=("session_lifecycle",)),
    Mutation("session_without_usage", "session_shape",
             Edits(response=(_each("session", _drop("usage"), _ANY),)),
             drive=("session_lifecycle",)),
    Mutation("is_demo_as_text", "avatar_shape",
             Edits(response=(_each("avatar", lambda a: a.update(is_demo=str(a["is_demo"])),
                                   _ANY),)),
             drive=("list_probe",)),
    Mutation("run_without_credits", "run_shape",
             Edits(response=(_each("run", _drop("credits"), _ANY),)), drive=("run_lifecycle",)),
    Mutation("run_status_without_progress", "run_status_shape",
             Edits(response=(_each("run.status", _drop("progress"), _ANY),)),
             drive=("run_lifecycle",)),
    Mutation("events_out_of_order", "run_event_shape", Edits(response=(events_reversed,)),
             drive=("run_events",)),
    Mutation("deletion_without_requested_at", "run_deletion_shape",
             Edits(response=(_each("run.deletion", _drop("requested_at"), _ANY),)),
             drive=("run_deletion",)),
    Mutation("asset_size_as_text", "asset_shape",
             Edits(response=(_each("asset", lambda a: a.update(byte_size=str(a["byte_size"])),
                                   _ANY),)),
             drive=("asset_probe",)),
    Mutation("model_without_pricing", "model_shape",
             Edits(response=(_each("model", _drop("pricing"), _ANY),)),
             drive=("bad_keys",)),
    Mutation("by_model_over_total", "usage_shape",
             Edits(response=(_body(by_model_over_total, _on("GET", "/v1/usage")),)),
             drive=("billing_reads",)),
    Mutation("balance_as_decimal", "integers_exact",
             Edits(response=(_body(lambda b: {**b, "balance_credits": float(b["balance_credits"])},
                                   _on("GET", "/v1/billing/quota")),)),
             drive=("billing_reads",)),
    Mutation("quota_without_can_start", "quota_shape",
             Edits(response=(_body(_drop("can_start_session"), _on("GET", "/v1/billing/quota")),)),
             drive=("billing_reads",)),
    Mutation("relay_without_media_url", "pipecat_shape",
             Edits(response=(_body(lambda b: {**b, "relay": _drop("media_url")(b["relay"])},
                                   _on("POST", "/v1/pipecat/sessions")),)),
             drive=("pipecat_session",)),
    # -- fields a deployment may leave out while unset keep their types when present (GAP-NULL-1),
    # -- and those the seed says are always present stay required
    Mutation("started_at_as_epoch", "timestamps_utc",
             Edits(response=(_each("session", _when_set("started_at", _epoch), _ANY),)),
             drive=("session_lifecycle_clock",)),
    Mutation("first_frame_at_local_time", "timestamps_utc",
             Edits(response=(_each("session", _when_set("first_frame_at",
                                                        lambda v: v.replace("Z", "+02:00")),
                                   _ANY),)),
             drive=("session_lifecycle_clock",)),
    Mutation("unset_session_error_as_text", "session_shape",
             Edits(response=(_each("session", _when_unset("error", ""), _ANY),)),
             drive=("session_lifecycle",)),
    Mutation("unset_asset_height_as_text", "asset_shape",
             Edits(response=(_each("asset", _when_unset("height", ""), _ANY),)),
             drive=("asset_probe",)),
    Mutation("run_omits_unset_completed_at", "run_shape",
             Edits(response=(_each("run", _when_unset("completed_at", drop=True), _ANY),)),
             drive=("run_lifecycle",)),
    Mutation("run_status_omits_unset_error", "run_status_shape",
             Edits(response=(_each("run.status", _when_unset("error", drop=True), _ANY),)),
             drive=("run_lifecycle",)),
    Mutation("status_as_list", "public_endpoints",
             Edits(response=(_body(lambda b: [b], _on("GET", "/v1/status")),))),
    Mutation("quota_not_found", "billing_reads",
             Edits(response=(_status(404, _on("GET", "/v1/billing/quota")),))),
    # -- authentication and scopes ----------------------------------------------------------------
    Mutation("status_needs_a_key", "authentication",
             Edits(response=(_status(401, lambda c: c.path == "/v1/status"
                                     and c.header("authorization") is None),)),
             drive=("public_endpoints",)),
    Mutation("accept_malformed_key", "authentication",
             Edits(request=(_bearer(lambda v: v == "not-a-key"),)),
             drive=("bad_keys",)),
    Mutation("accept_revoked_key", "authentication",
             Edits(request=(_as_key("revoked", lambda k: k["unrestricted"]),)),
             drive=("revoked_key",)),
    Mutation("embed_id_as_key", "authentication",
             Edits(request=(_bearer(lambda v: v.startswith("emb_")),)),
             drive=("bad_keys",)),
    Mutation("keys_of_another_form", "api_key_format",
             Edits(request=(_bearer(lambda v: v.startswith("tok_")),)), api_key=alias),
    Mutation("key_without_bearer_accepted", "api_key_format",
             Edits(request=(bearer_optional,))),
    Mutation("ignore_read_scope", "scopes",
             Edits(request=(_as_key("runs_read", lambda k: k["unrestricted"]),)),
             drive=("scope_runs_read",)),
    Mutation("ignore_write_scope", "scopes",
             Edits(request=(_as_key("runs_write", lambda k: k["unrestricted"]),)),
             drive=("scope_runs_write",)),
    Mutation("other_org_reads_sessions", "tenant_isolation",
             Edits(request=(_as_key("other_unrestricted", lambda k: k["unrestricted"]),)),
             drive=("foreign_keys",)),
    Mutation("other_org_reads_avatars", "tenant_isolation",
             Edits(request=(_as_key("other_unrestricted", lambda k: k["unrestricted"]),)),
             drive=("foreign_keys", "avatar_upload",)),
    # -- idempotency ----------------------------------------------------------------------------
    Mutation("replay_with_a_new_id", "idempotent_replay", Edits(response=(replayed_new_id,)),
             drive=("idempotent_creates",)),
    Mutation("keys_never_expire", "idempotency_window", Edits(request=(keys_never_expire,))),
    Mutation("long_keys_ignored", "session_create", Edits(request=(long_keys_dropped,)),
             drive=("idempotency_key_length",)),
    # -- lists ---------------------------------------------------------------------------------
    Mutation("avatars_as_array", "list_envelope",
             Edits(response=(_body(lambda b: b["data"], _on("GET", "/v1/avatars")),)),
             drive=("list_probe",)),
    Mutation("cursor_as_number", "list_envelope",
             Edits(response=(_body(lambda b: {**b, "next_cursor": 1}
                                   if isinstance(b.get("next_cursor"), str) else b, _ANY),)),
             drive=("list_probe",)),
    Mutation("ignore_starting_after", "list_walks",
             Edits(request=(_query(_without_param("starting_after"), "/v1/"),)),
             drive=("list_walk",)),
    Mutation("zero_limit_ignored", "page_sizes",
             Edits(request=(_query(_without_zero_limit, "/v1/avatars"),)),
             drive=("list_probe",)),
    Mutation("long_cursors_ignored", "cursor_length_bound",
             Edits(request=(_query(_without_param("starting_after", 40), "/v1/"),))),
    Mutation("avatar_default_page_of_3", "avatar_list_default",
             Edits(request=(_query(default_page_of_3, "/v1/avatars"),))),
    # -- sessions -------------------------------------------------------------------------------
    Mutation("end_reopens", "session_transitions",
             Edits(response=(_each("session", lambda s: s.update(status="queued")
                                   if s["status"] == "canceled" else None,
                                   _on("POST", "/v1/sessions/", "/end")),)),
             drive=("session_lifecycle",)),
    Mutation("first_frame_never_stamped", "session_stamps",
             Edits(response=(_each("session", _set(first_frame_at=None), _ANY),)),
             drive=("session_lifecycle_clock",)),
    Mutation("max_duration_ignored", "session_timers",
             timeouts_ignored("max_duration_seconds", 20, 3600),
             drive=("session_timers_probe",)),
    Mutation("idle_timeout_ignored", "session_timers",
             timeouts_ignored("idle_timeout_seconds", 20, 600),
             drive=("session_timers_probe",)),
    Mutation("no_capacity_renamed", "startup_timeout_fails",
             Edits(response=(_each("session", lambda s: s.update(error={"code": "timeout"})
                                   if s.get("error") else None, _ANY),))),
    Mutation("unplaced_failure_without_code", "unplaced_failure_code",
             Edits(response=(_each("session", lambda s: s.update(error={"code": "timeout"})
                                   if s.get("error") else None, _ANY),),
                   config={"scheduler.workers": 0}),
             drive=("session_lifecycle_clock",)),
    Mutation("queued_forever", "startup_timeout",
             Edits(config={"scheduler.workers": 0, "limits.startup_timeout_seconds": 3600}),
             drive=("session_lifecycle_clock",)),
    Mutation("at_capacity_renamed", "at_capacity_refused",
             Edits(response=(_error(lambda c, r: r.status == 503, code="overloaded"),))),
    Mutation("default_idle_60", "session_create",
             Edits(request=(_request_json(default_idle_60, "POST", "/v1/sessions"),)),
             drive=("session_defaults",)),
    Mutation("quality_not_echoed", "session_create",
             Edits(response=(_each("session", _set(quality="standard"), _SESSIONS),)),
             drive=("session_create_bounds", "session_defaults")),
    Mutation("idle_601_clamped", "session_create",
             Edits(request=(_request_json(idle_clamped, "POST", "/v1/sessions"),)),
             drive=("session_create_bounds",)),
    Mutation("max_duration_3601_accepted", "session_create",
             Edits(request=(_request_json(max_duration_clamped, "POST", "/v1/sessions"),)),
             drive=("session_create_bounds",)),
    Mutation("big_metadata_accepted", "session_create",
             Edits(request=(_request_json(big_metadata_dropped, "POST", "/v1/sessions"),)),
             drive=("session_create_bounds",)),
    Mutation("unsupported_transport_422", "session_create",
             Edits(response=(unsupported_as_422,)),
             drive=("transport_unsupported",)),
    Mutation("per_key_cap_of_2", "concurrency_caps",
             Edits(config={"limits.concurrent_sessions_per_key": 2}),
             drive=("cap_probe",)),
    Mutation("canceled_later_running", "terminal_states_final",
             Edits(response=(canceled_later_running,)), drive=("session_lifecycle",)),
    Mutation("transport_param_unqualified", "session_create",
             Edits(response=(_error(lambda c, r: r.error() is not None
                                    and r.error().get("code") == "transport.unsupported",
                                    param="transport"),)),
             drive=("transport_unsupported",)),
    Mutation("reserved_keys_dropped", "session_create",
             Edits(request=(_request_json(reserved_keys_dropped, "POST", "/v1/sessions"),)),
             drive=("reserved_metadata_key",)),
    Mutation("concurrency_code_renamed", "concurrency_caps",
             Edits(response=(_error(lambda c, r: r.error() is not None
                                    and r.error().get("code") == "concurrent_sessions",
                                    code="session_limit"),)),
             drive=("cap_probe",)),
    Mutation("thirty_creates_a_minute", "create_rate_limit",
             Edits(config={"limits.rate.session_creates_per_window": 30}),
             drive=("rate_limit_bursts",)),
    Mutation("nine_creates_a_minute", "create_rate_limit",
             Edits(config={"limits.rate.session_creates_per_window": 9}),
             drive=("rate_limit_bursts",)),
    Mutation("no_retry_after_on_cap", "retry_after_present",
             Edits(response=(no_retry_after_on_cap,)), drive=("cap_probe",)),
    Mutation("listed_sessions_lose_metadata", "session_unchanged",
             Edits(response=(_each("session", _set(metadata={}), _on("GET", "/v1/sessions")),)),
             drive=("list_walk",)),
    Mutation("plan_refuses_pro", "session_create", Edits(request=(pro_not_offered,)),
             drive=("session_create_bounds", "session_defaults")),
    Mutation("pipecat_object_renamed", "pipecat_session",
             Edits(response=(_body(lambda b: {**b, "object": "pipecat_session"},
                                   _on("POST", "/v1/pipecat/sessions")),))),
    # -- avatars --------------------------------------------------------------------------------
    Mutation("uploads_answer_ready", "avatars",
             Edits(response=(_each("avatar", _set(status="ready"), _on("POST", "/v1/avatars")),)),
             drive=("avatar_upload",)),
    Mutation("fitted_avatar_flips", "avatars", Edits(response=(fitted_avatar_flips,)),
             drive=("avatar_fitting",)),
    # -- runs, assets, usage --------------------------------------------------------------------
    Mutation("run_status_missing", "owner_reads",
             Edits(request=(rewrite_path(_on("GET", "/v1/runs/", "/status"), "-gone"),)),
             drive=("run_lifecycle",)),
    Mutation("events_zero_limit_ignored", "page_sizes",
             Edits(request=(_query(_without_zero_limit, "/v1/runs/"),)),
             drive=("run_events",)),
    Mutation("events_cursor_as_text", "list_envelope",
             Edits(response=(_body(lambda b: {**b, "next_cursor": str(b["next_cursor"])}
                                   if isinstance(b.get("next_cursor"), int) else b,
                                   _on("GET", "/v1/runs/", "/events")),)),
             drive=("run_events",)),
    Mutation("refused_yet_made", "creates_answered_once", Edits(response=(busy_yet_made,)),
             drive=("list_walk",)),
    Mutation("deleted_run_keeps_outputs", "runs", Edits(response=(deleted_run_keeps_outputs,)),
             drive=("run_deletion",)),
    Mutation("deleted_runs_hidden", "list_walks", Edits(response=(deleted_runs_hidden,)),
             drive=("run_deletion",)),
    Mutation("asset_content_missing", "asset_content",
             Edits(request=(rewrite_path(_on("GET", "/v1/assets/", "/content"), "-gone"),)),
             drive=("asset_probe",)),
    Mutation("half_window_accepted", "usage_window",
             Edits(request=(_query(half_window_accepted, "/v1/usage"),)),
             drive=("billing_reads",)),
    Mutation("by_model_frozen", "usage_accounting", Edits(response=(by_model_frozen,)),
             drive=("usage_probe",)),
    # -- what only fuzzing reaches --------------------------------------------------------------
    Mutation("quota_server_error", "not_a_server_error", Edits(response=(quota_server_error,))),
    Mutation("plans_redirect", "status_code_conformance",
             Edits(response=(_status(301, _PLANS),))),
    Mutation("plans_as_text", "content_type_conformance",
             Edits(response=(_header("content-type", "text/plain", _PLANS),))),
    Mutation("plans_request_id_unprefixed", "response_headers_conformance",
             Edits(response=(_header("x-request-id", "r-1", _PLANS),))),
    Mutation("quota_without_balance", "response_schema_conformance",
             Edits(response=(_body(_drop("balance_credits"), _on("GET", "/v1/billing/quota")),))),
    Mutation("run_reads_take_anything", "negative_data_rejection",
             Edits(request=(_query(lambda pairs: [], "/v1/runs"), run_reads_need_no_key))),
    Mutation("plans_refused", "positive_data_acceptance",
             Edits(response=(_status(405, _PLANS),))),
)  # fmt: skip
