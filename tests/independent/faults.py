"""The registry of deliberate faults, switchable by name.

Each fault is a bug a team could plausibly ship: it breaks exactly one statement of the seed
specification (never an open point), shows over HTTP to a client holding only the published
credentials within minutes of target time, and leaves the service running. The registry is
plain data: the implementation asks :class:`FaultSet` whether a name is on, and the package's
own tests walk the registry to prove each fault changes what a client sees.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Fault:
    name: str
    section: str
    rule: str
    """The statement the fault breaks, in our own words."""
    effect: str
    """What the broken service does instead."""


CONVENTIONS = "1. What the service does / Conventions"
SESSION = "2. Resources and their fields / Session"
TRANSPORT = "2. Resources and their fields / Transport config"
AVATAR = "2. Resources and their fields / Avatar"
RUN = "2. Resources and their fields / Run"
RUN_EVENT = "2. Resources and their fields / Run event"
RUN_STATUS = "2. Resources and their fields / Run status"
RUN_DELETION = "2. Resources and their fields / Run deletion"
ASSET = "2. Resources and their fields / Asset"
MODEL = "2. Resources and their fields / Model"
USAGE = "2. Resources and their fields / Usage summary"
QUOTA = "2. Resources and their fields / Quota"
RELAY = "2. Resources and their fields / Pipecat relay"
SESSION_STATES = "3. States and transitions / Session states"
AVATAR_STATES = "3. States and transitions / Avatar states"
RUN_STATES = "3. States and transitions / Runs and run deletions"
EP_SESSIONS = "4. Endpoints / Sessions"
EP_PIPECAT = "4. Endpoints / Pipecat media session"
EP_AVATARS = "4. Endpoints / Avatars"
EP_RUNS = "4. Endpoints / Runs"
EP_ASSETS = "4. Endpoints / Assets"
EP_MODELS = "4. Endpoints / Models"
EP_USAGE = "4. Endpoints / Usage and billing"
AUTH = "5. Authentication"
EVENTS = "6. Events"
ERRORS = "7. Errors"
LIMITS = "8. Limits"
VERSIONING = "9. Versioning"


def _f(name: str, section: str, rule: str, effect: str) -> tuple[str, Fault]:
    return name, Fault(name, section, rule, effect)


FAULTS: dict[str, Fault] = dict(
    [
        # -- 1. Conventions ---------------------------------------------------------------
        _f(
            "pipecat_session_id_prefix",
            CONVENTIONS,
            "Every session id, however the session was created, starts with sess_.",
            "Sessions made through the pipecat endpoint get ids starting with pcs_.",
        ),
        _f(
            "started_at_naive_timestamp",
            CONVENTIONS,
            "Timestamps are ISO-8601 strings in UTC, carrying their zone.",
            "started_at is rendered as a local-looking time with no Z or offset.",
        ),
        _f(
            "has_more_true_on_exact_page",
            CONVENTIONS,
            "has_more tells whether items remain after the page.",
            "A page that happens to end exactly on the last item still says has_more: true.",
        ),
        _f(
            "next_cursor_null_on_empty",
            CONVENTIONS,
            "An empty final page carries no next_cursor key at all.",
            "Empty lists carry next_cursor: null.",
        ),
        _f(
            "run_events_cursor_string",
            CONVENTIONS,
            "The run events list's next_cursor is an integer.",
            "It is rendered as a numeric string.",
        ),
        _f(
            "session_pages_repeat_cursor_item",
            CONVENTIONS,
            "starting_after resumes the list after the named item.",
            "The sessions list restarts at the cursor item itself, repeating it on the next page.",
        ),
        _f(
            "run_idempotency_ignored",
            CONVENTIONS,
            "Run creation honours Idempotency-Key for safe retries.",
            "The header is ignored on run creation: a retry creates a second run.",
        ),
        _f(
            "unknown_route_plain_404",
            CONVENTIONS,
            "Every non-2xx response, an unknown path included, uses the error envelope.",
            "Unknown paths answer 404 with a plain-text body.",
        ),
        # -- 2. Resources ------------------------------------------------------------------
        _f(
            "worker_token_echoed",
            TRANSPORT,
            "The transport's worker_token is accepted on requests and never sent back.",
            "The create response (and its replays) echoes worker_token in transport.",
        ),
        _f(
            "transport_ws_url_accepted",
            TRANSPORT,
            "The livekit url is a wss:// address.",
            "A plain ws:// url is accepted.",
        ),
        _f(
            "max_duration_not_clamped",
            SESSION,
            "max_duration_seconds on a session is the effective value after the plan clamp.",
            "The requested value is echoed even when the plan limit is lower.",
        ),
        _f(
            "session_billable_seconds_float",
            SESSION,
            "usage.billable_seconds is an integer.",
            "It is rendered as a float (0.0, 12.0...).",
        ),
        _f(
            "session_list_drops_metadata",
            SESSION,
            "A session's metadata is the customer's JSON, wherever the session appears.",
            "Sessions in list responses carry an empty metadata object.",
        ),
        _f(
            "stock_avatar_not_demo_on_get",
            AVATAR,
            "is_demo is true for platform stock avatars.",
            "Retrieving a stock avatar by id says is_demo: false (the list is right).",
        ),
        _f(
            "failure_reason_on_ready_avatar",
            AVATAR,
            "The build-failure reason exists only while an avatar is failed.",
            "Ready customer avatars keep a stale failure-reason string.",
        ),
        _f(
            "run_external_id_omitted",
            RUN,
            "external_id is always present on a run.",
            "Runs created without an external_id omit the field.",
        ),
        _f(
            "run_media_output_missing_type",
            RUN,
            "Every output item has modality, role and type.",
            "Media (file) output items lack type.",
        ),
        _f(
            "run_event_missing_part_id",
            RUN_EVENT,
            "Every run event has a string part_id.",
            "Lifecycle events (queued, started, finished) carry part_id: null.",
        ),
        _f(
            "run_status_error_omitted",
            RUN_STATUS,
            "A run status always has error, alongside id, status and progress.",
            "error is left out of run status while there is none.",
        ),
        _f(
            "deletion_requested_at_missing",
            RUN_DELETION,
            "A run deletion always carries requested_at.",
            "The deletion is returned without requested_at.",
        ),
        _f(
            "asset_byte_size_off",
            ASSET,
            "byte_size is the size of the asset's content in bytes.",
            "byte_size is that of the base64 text the worker uploaded, larger than the content.",
        ),
        _f(
            "model_execution_modes_string",
            MODEL,
            "execution_modes is an array of strings.",
            "The media model's execution_modes is one comma-joined string.",
        ),
        _f(
            "usage_by_model_keyed_by_run",
            USAGE,
            "by_model maps model ids to credits.",
            "by_model is keyed by run id.",
        ),
        _f(
            "usage_sessions_counts_unbilled",
            USAGE,
            "sessions counts the sessions that contributed usage in the window.",
            "It counts every session created in the window, canceled ones included.",
        ),
        _f(
            "usage_by_quality_in_credits",
            USAGE,
            "by_quality maps each quality tier to billable seconds.",
            "by_quality holds credits.",
        ),
        _f(
            "usage_daily_ignores_timezone",
            USAGE,
            "Daily buckets are days in the requested timezone.",
            "Days are always UTC days, whatever timezone is asked for.",
        ),
        _f(
            "quota_balance_float",
            QUOTA,
            "Quota credit fields are integers.",
            "balance_credits is rendered as a float.",
        ),
        _f(
            "pipecat_relay_type_wrong",
            RELAY,
            "The relay's type is the constant websocket.",
            "The relay says type: pipecat.",
        ),
        # -- 3. States ---------------------------------------------------------------------
        _f(
            "end_queued_session_ends",
            SESSION_STATES,
            "Ending a session that has not started cancels it.",
            "It is marked ended instead of canceled.",
        ),
        _f(
            "end_running_skips_ending",
            SESSION_STATES,
            "Ending a running session drains through ending before ended.",
            "It jumps straight to ended.",
        ),
        _f(
            "end_terminal_conflict",
            SESSION_STATES,
            "Ending an already terminal session answers 200 with its state unchanged.",
            "It answers 409 conflict.",
        ),
        _f(
            "idle_timeout_not_enforced",
            SESSION_STATES,
            "A running session with no audio for idle_timeout_seconds ends.",
            "Running livekit sessions never idle out; only max duration ends them.",
        ),
        _f(
            "max_duration_ends_failed",
            SESSION_STATES,
            "A session that runs past max_duration_seconds ends as ended.",
            "It ends as failed.",
        ),
        _f(
            "startup_timeout_ignored",
            SESSION_STATES,
            "A job that cannot be placed within the startup timeout fails.",
            "Unplaceable sessions wait in queued indefinitely.",
        ),
        _f(
            "avatar_created_ready",
            AVATAR_STATES,
            "An uploaded avatar starts out processing.",
            "The upload answers with status ready before fitting has run.",
        ),
        _f(
            "avatar_jpeg_stuck_processing",
            AVATAR_STATES,
            "Fitting ends an avatar's processing, as ready or failed.",
            "JPEG uploads are never picked up by fitting and stay processing.",
        ),
        _f(
            "avatar_failed_without_reason",
            AVATAR_STATES,
            "A failed fitting sets a failure reason.",
            "Failed avatars carry no failure reason.",
        ),
        _f(
            "deleted_run_not_listed",
            RUN_STATES,
            "A deleted run's id stays listable.",
            "Deleted runs vanish from GET /v1/runs.",
        ),
        _f(
            "deleted_run_keeps_outputs",
            RUN_STATES,
            "A deleted run is a tombstone with empty content.",
            "The tombstone still shows its outputs.",
        ),
        _f(
            "run_delete_refunds_billing",
            RUN_STATES,
            "Deleting a run leaves its billing rows in place.",
            "Its charge disappears from usage.",
        ),
        # -- 4. Endpoints ------------------------------------------------------------------
        _f(
            "transport_unsupported_param_missing",
            EP_SESSIONS,
            "transport.unsupported names the offending field transport.type.",
            "param is null.",
        ),
        _f(
            "idle_timeout_600_refused",
            EP_SESSIONS,
            "idle_timeout_seconds accepts 1 to 600 inclusive.",
            "600 is refused.",
        ),
        _f(
            "idempotency_key_255_refused",
            EP_SESSIONS,
            "An Idempotency-Key may be 1 to 255 characters long.",
            "A key of exactly 255 characters is refused.",
        ),
        _f(
            "session_accepts_foreign_avatar",
            EP_SESSIONS,
            "A session's avatar is a stock avatar or one the key's organization may use.",
            "Another organization's avatar is accepted.",
        ),
        _f(
            "session_status_filter_ignored",
            EP_SESSIONS,
            "The sessions list filters by status.",
            "The status filter is parsed and then ignored.",
        ),
        _f(
            "at_capacity_without_retry_after",
            EP_SESSIONS,
            "The at_capacity refusal carries Retry-After.",
            "503 at_capacity comes without Retry-After.",
        ),
        _f(
            "pipecat_relay_type_unchecked",
            EP_PIPECAT,
            "The pipecat relay type accepts only websocket.",
            "Any relay type string is accepted.",
        ),
        _f(
            "avatar_gif_becomes_ready",
            EP_AVATARS,
            "The portrait must be PNG or JPEG.",
            "GIF portraits are accepted and fitted to ready.",
        ),
        _f(
            "avatar_name_ignored",
            EP_AVATARS,
            "The optional name field names the new avatar.",
            "The name field is ignored; the default name is used.",
        ),
        _f(
            "avatar_search_case_sensitive",
            EP_AVATARS,
            "The avatar search matches name or id case-insensitively.",
            "It matches case-sensitively.",
        ),
        _f(
            "avatar_org_filter_includes_stock",
            EP_AVATARS,
            "The org filter value lists only the organization's own avatars.",
            "It lists stock avatars too.",
        ),
        _f(
            "runs_cursor_limit_too_short",
            EP_RUNS,
            "The runs cursor may be up to 40 characters, enough for any run id.",
            "Cursors over 26 characters (every real run id) are refused.",
        ),
        _f(
            "run_events_limit_500_refused",
            EP_RUNS,
            "The run events limit accepts 1 to 500 inclusive.",
            "500 is refused.",
        ),
        _f(
            "run_events_next_page_repeats",
            EP_RUNS,
            "Following next_cursor continues the events after the page.",
            "next_cursor is one sequence short, so the last event repeats on the next page.",
        ),
        _f(
            "run_delete_not_enterprise_only",
            EP_RUNS,
            "Run deletion is for enterprise accounts only.",
            "Any plan may delete runs.",
        ),
        _f(
            "run_delete_returns_200",
            EP_RUNS,
            "A run deletion is accepted with 202.",
            "It answers 200.",
        ),
        _f(
            "asset_content_cross_tenant",
            EP_ASSETS,
            "Asset content belongs to the asset's organization.",
            "Any key can fetch any asset's content by id.",
        ),
        _f(
            "models_refuse_scoped_keys",
            EP_MODELS,
            "GET /v1/models answers 200 for every working key.",
            "Keys limited to run scopes get 403.",
        ),
        _f(
            "usage_period_and_window_accepted",
            EP_USAGE,
            "period and the explicit period_start/period_end pair exclude each other.",
            "Both together are accepted; the period wins.",
        ),
        _f(
            "usage_window_half_accepted",
            EP_USAGE,
            "period_start and period_end come together.",
            "One without the other is accepted and the current month is used.",
        ),
        _f(
            "usage_previous_month_is_current",
            EP_USAGE,
            "period=previous_month reports the calendar month before the current one.",
            "It reports the current month.",
        ),
        _f(
            "status_rejects_bad_key",
            EP_USAGE,
            "GET /v1/status is public and unauthenticated.",
            "It answers 401 when the caller sends an invalid bearer key.",
        ),
        # -- 5. Authentication ----------------------------------------------------------------
        _f(
            "bearer_prefix_optional",
            AUTH,
            "The Authorization header uses the Bearer scheme; anything else is malformed (401).",
            "A bare key without the Bearer scheme is accepted.",
        ),
        _f(
            "revoked_key_passes_models",
            AUTH,
            "A revoked key is refused with 401.",
            "GET /v1/models (the key test) accepts a revoked key.",
        ),
        _f(
            "scope_error_code_generic",
            AUTH,
            "A valid key lacking a scope gets 403 with code api_key.scope_required.",
            "The 403 carries code forbidden.",
        ),
        _f(
            "cancel_allowed_with_read_scope",
            AUTH,
            "Cancelling a run needs runs:write.",
            "A runs:read key can cancel runs.",
        ),
        _f(
            "media_run_with_write_scope_only",
            AUTH,
            "Generating media needs both runs:read and runs:write.",
            "A runs:write key alone can create media runs.",
        ),
        _f(
            "plans_require_auth",
            AUTH,
            "GET /v1/billing/plans is public.",
            "It answers 401 without a key.",
        ),
        _f(
            "runs_list_with_write_scope",
            AUTH,
            "Listing runs needs runs:read.",
            "A runs:write key can list runs.",
        ),
        # -- 6. Events -----------------------------------------------------------------------
        _f(
            "started_at_set_at_create",
            EVENTS,
            "started_at is set when the worker emits session.starting.",
            "started_at is stamped at creation, before any worker starts.",
        ),
        _f(
            "first_frame_at_never_set",
            EVENTS,
            "The first frame sets first_frame_at.",
            "first_frame_at stays unset on running sessions.",
        ),
        _f(
            "run_events_newest_first",
            EVENTS,
            "Run events are ordered by sequence.",
            "The events list comes newest first.",
        ),
        # -- 7. Errors -----------------------------------------------------------------------
        _f(
            "request_id_mismatch_on_not_found",
            ERRORS,
            "error.request_id echoes the X-Request-Id response header.",
            "On 404 the envelope carries a different request id than the header.",
        ),
        _f(
            "request_id_header_missing_on_401",
            ERRORS,
            "The envelope's request_id echoes an X-Request-Id response header.",
            "401 responses have no X-Request-Id header.",
        ),
        _f(
            "error_envelope_extra_field_on_429",
            ERRORS,
            "The error object has exactly type, code, message, param and request_id.",
            "429 envelopes add retry_after.",
        ),
        _f(
            "concurrency_refusal_typed_rate_limit",
            ERRORS,
            "A concurrency cap refusal is type quota_exceeded.",
            "It is typed rate_limit (code concurrent_sessions).",
        ),
        _f(
            "no_capacity_code_wrong",
            ERRORS,
            "A session that cannot be placed in time fails with error code no_capacity.",
            "Its error code is startup_timeout.",
        ),
        _f(
            "validation_param_not_dotpath",
            ERRORS,
            "param names the offending field as a dot-path.",
            "Errors in transport fields name only the leaf (url, room_name).",
        ),
        # -- 8. Limits -----------------------------------------------------------------------
        _f(
            "rate_limit_off_by_one",
            LIMITS,
            "POST /v1/sessions allows 10 requests per minute per key.",
            "It allows 11.",
        ),
        _f(
            "rate_limit_shared_across_keys",
            LIMITS,
            "The session create rate is counted per key.",
            "One budget is shared by every key of every organization.",
        ),
        _f(
            "rate_limit_429_missing_retry_after",
            LIMITS,
            "A rate-limit 429 carries Retry-After.",
            "It does not.",
        ),
        _f(
            "rate_limit_429_missing_headers",
            LIMITS,
            "Rate-limited responses carry X-RateLimit-Limit, -Remaining and -Reset.",
            "The 429 rate_limit refusal lacks them.",
        ),
        _f(
            "concurrency_429_missing_retry_after",
            LIMITS,
            "Every 429, a concurrency refusal included, carries Retry-After.",
            "The concurrent_sessions refusal has no Retry-After.",
        ),
        _f(
            "per_key_cap_two",
            LIMITS,
            "A key may hold one concurrent session.",
            "It may hold two.",
        ),
        _f(
            "cap_counts_terminal_sessions",
            LIMITS,
            "Only live sessions count toward the concurrency caps.",
            "A session canceled before placement keeps counting against its key.",
        ),
        _f(
            "idempotency_conflict_not_detected",
            LIMITS,
            "Reusing an idempotency key with a different body is a 409 conflict.",
            "The original response is replayed for any body.",
        ),
        _f(
            "idempotency_replay_creates_session",
            LIMITS,
            "The same key and body within the window return the original response.",
            "Session creates ignore the stored response and make a new session.",
        ),
        _f(
            "metadata_limit_off_by_one",
            LIMITS,
            "Session metadata may be at most 8 KB.",
            "The size check leaves out the outer braces, so two bytes over still pass.",
        ),
        _f(
            "max_duration_ceiling_off_by_one",
            LIMITS,
            "max_duration_seconds above 3600 is refused.",
            "3601 is accepted (and clamped).",
        ),
        _f(
            "idle_timeout_default_60",
            LIMITS,
            "idle_timeout_seconds defaults to 30.",
            "It defaults to 60.",
        ),
        _f(
            "avatar_page_size_100_refused",
            LIMITS,
            "Page sizes run from 1 to 100 inclusive.",
            "The avatars list refuses limit=100.",
        ),
        _f(
            "reserved_key_prefix_match",
            LIMITS,
            "_avatar.debug_record is the only reserved metadata key; other _avatar.* keys fail.",
            "Any key that starts with _avatar.debug_record passes.",
        ),
        _f(
            "debug_record_non_boolean_accepted",
            LIMITS,
            "_avatar.debug_record is a boolean.",
            "Any value is accepted for it.",
        ),
        _f(
            "assets_limit_zero_accepted",
            LIMITS,
            "Page sizes are at least 1.",
            "The assets list accepts limit=0 and returns an empty page.",
        ),
        # -- 9. Versioning -------------------------------------------------------------------
        _f(
            "websocket_transport_accepted",
            VERSIONING,
            "Only livekit is available as a session transport; websocket is reserved.",
            "A websocket transport is accepted on POST /v1/sessions.",
        ),
    ]
)


class FaultSet:
    """The faults switched on for one service; unknown names are refused up front."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        names = tuple(names)
        unknown = sorted(set(names) - FAULTS.keys())
        if unknown:
            raise KeyError(f"unknown fault(s): {', '.join(unknown)}")
        self.names = frozenset(names)

    def __contains__(self, name: object) -> bool:
        if name not in FAULTS:
            raise KeyError(f"no such fault: {name!r}")  # a typo in the implementation
        return name in self.names

    def on(self, name: str) -> bool:
        return name in self

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self.names))
