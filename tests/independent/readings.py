"""Two readings of the points the seed specification leaves open.

Both readings conform to every statement the spec makes; they differ on each point it leaves
"not shown" or ambiguous, so a conformance tester that relies on one team's guess fails against
the other. Each field below names one open point; the two instances pin the two answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Reading:
    name: str

    # -- status codes -----------------------------------------------------------------------
    create_status: dict[str, int]
    """Success status of each create: sessions, pipecat, avatars, runs."""
    end_transition_status: int
    """Status of ``POST /sessions/{id}/end`` when it starts a drain (terminal ones are 200)."""
    cross_tenant_status: Literal[403, 404]
    """Another organization's resource: refused (403) or hidden (404)."""
    validation_status: Literal[400, 422]
    """Status of a generic validation failure of a body or a parameter."""
    body_ref_status: Literal[404, 422]
    """An ``avatar_id`` in a body that names no usable avatar of the caller."""
    avatar_not_ready_status: Literal[409, 422]
    """A session asked for on an avatar that is still processing or has failed."""

    # -- lists ------------------------------------------------------------------------------
    page_size_policy: Literal["refuse", "clamp"]
    """An out-of-range ``limit``: a validation error, or clamped into range."""
    default_page_size: int
    """Page size of lists whose default the spec does not give (avatars always default 20)."""
    list_order: Literal["newest_first", "oldest_first"]
    unknown_cursor: Literal["refuse", "empty"]
    """A ``starting_after`` that names no item of the list."""
    session_status_filter: str
    """Name of the session list's status filter (repeatable or comma-separated)."""
    avatar_filter_params: tuple[str, str]
    """Names of the avatar list's (ownership filter, name/id search) parameters."""
    run_events_cursor: Literal["after", "offset"]
    """``after``: param ``starting_after``, exclusive, sequences from 1, cursor = last sequence.
    ``offset``: param ``offset``, inclusive, sequences from 0, cursor = next sequence."""
    models_has_more: bool
    """Whether ``GET /v1/models`` also says ``has_more: false``."""

    # -- rate limiting and caps -------------------------------------------------------------
    rate_limiter: Literal["fixed_window", "token_bucket"]
    rate_headers: Literal["on_429", "always"]
    """``X-RateLimit-*`` only on rate-limit refusals, or on every ``POST /v1/sessions``."""
    rate_reset: Literal["delta", "epoch"]
    """``X-RateLimit-Reset`` as seconds from now, or as Unix epoch seconds."""
    rate_limit_pipecat: bool
    """Whether ``POST /v1/pipecat/sessions`` spends the same per-key session budget."""
    caps_count_queued: bool
    """Queued (unplaced) sessions count toward caps; when they do not, the scheduler holds a
    queued session until its key and organization have room."""
    caps_count_ending: bool
    retry_after_capacity: int
    retry_after_concurrency: int

    # -- sessions ---------------------------------------------------------------------------
    end_booting: Literal["drain", "cancel"]
    """``end`` on a placed session that has no first frame yet (status ``starting``)."""
    pipecat_shows_created: bool
    """Pipecat sessions are ``created`` until the relay is attached (1 s), then ``queued``."""
    pipecat_idle_applies: bool
    """Whether the pipecat relay counts as a transport that observes inbound audio."""
    pipecat_fields: dict[str, str]
    """Names of the pipecat body's idle, max-duration, quality and relay-type fields."""
    default_quality: str
    audio_source_values: tuple[str, ...]
    """Allowed ``audio_source`` values; the first is the default."""
    worker_token_required: bool
    metadata_limit_bytes: int
    """"8 KB" read as 8192 or 8000 bytes of compact JSON."""
    reserved_key_param: Literal["metadata", "key"]
    """``param`` of ``metadata.reserved_key``: ``metadata``, or ``metadata.<the key>``."""
    unknown_body_fields: Literal["ignore", "refuse"]
    unset_fields: Literal["null", "omit"]
    """Session fields without a value yet (``started_at``, ``first_frame_at``, ``error``)."""
    end_reason_field: bool
    """Whether sessions say why they ended (``end_reason``)."""
    max_duration_from: Literal["first_frame", "started"]
    billable_rounding: Literal["ceil", "floor"]
    plan_max_duration: dict[str, int]
    """The plan clamp of ``max_duration_seconds``."""
    idle_max_tie: Literal["max_duration", "idle_timeout"]
    """Which reason wins when both deadlines fall at once."""

    # -- idempotency ------------------------------------------------------------------------
    idempotency_scope: Literal["key", "organization"]
    idempotency_body_match: Literal["canonical", "raw"]
    """Same body means the same JSON value, or the same bytes."""
    idempotency_replay_header: bool

    # -- avatars ----------------------------------------------------------------------------
    bad_image: Literal["refuse_at_upload", "fail_in_fitting"]
    avatar_optional_fields: dict[str, str]
    """Names of the four optional fields: instructions, voice_style, failure_reason,
    from_photo."""
    default_avatar_name: Literal["filename", "untitled"]

    # -- runs -------------------------------------------------------------------------------
    run_status_names: dict[str, str]
    run_event_types: dict[str, str]
    deletion_status_names: dict[str, str]
    operation_names: dict[str, str]
    output_role: str
    output_file_type: str
    cancel_path: Literal["slash", "colon"]
    """``POST /v1/runs/{id}/cancel`` or ``POST /v1/runs/{id}:cancel``."""
    cancel_terminal: Literal["conflict", "unchanged"]
    delete_scope: Literal["runs:write", "unrestricted"]
    delete_repeat: Literal["same", "conflict"]
    deleted_status: Literal["keep", "deleted"]
    plan_refusal_code: str
    external_id_default: Literal["empty", "run_id"]
    optional_object_field: bool
    """Whether the optional ``object`` appears on runs, run statuses and models."""
    lifecycle_part_id: str

    # -- assets -----------------------------------------------------------------------------
    asset_content: Literal["inline", "link"]
    """``GET /v1/assets/{id}/content`` answers JSON carrying the bytes (base64) or a signed,
    key-less download link; a redirect would be a non-2xx answer without the envelope."""
    asset_scope_value: str
    asset_inapplicable: Literal["null", "zero"]
    """``width``/``height``/``duration_ms`` of an asset they do not apply to."""
    list_deleted_assets: bool

    # -- auth -------------------------------------------------------------------------------
    non_run_scope: Literal["unrestricted", "any"]
    """Scopes for sessions, avatars, assets, usage and quota: an unrestricted key, or any."""
    bearer_case_insensitive: bool
    www_authenticate: bool
    honor_client_request_id: bool
    unauthenticated_unknown_route: Literal[401, 404]

    # -- usage and public metadata -----------------------------------------------------------
    usage_tz_param: str
    naive_timestamps: Literal["utc", "refuse"]
    speech_modes_always: bool
    """Whether ``by_speech_billing_mode`` lists both modes even when zero."""
    usage_extra_fields: dict[str, str]
    """Names of embed usage, credits per operation and recent charges."""
    public_style: Literal["a", "b"]
    relay: dict[str, object] = field(default_factory=dict)
    """Fixed values of the pipecat relay."""


READING_A = Reading(
    name="a",
    create_status={"sessions": 200, "pipecat": 200, "avatars": 200, "runs": 200},
    end_transition_status=200,
    cross_tenant_status=403,
    validation_status=400,
    body_ref_status=404,
    avatar_not_ready_status=409,
    page_size_policy="refuse",
    default_page_size=20,
    list_order="newest_first",
    unknown_cursor="refuse",
    session_status_filter="status",
    avatar_filter_params=("scope", "q"),
    run_events_cursor="after",
    models_has_more=False,
    rate_limiter="fixed_window",
    rate_headers="on_429",
    rate_reset="delta",
    rate_limit_pipecat=False,
    caps_count_queued=True,
    caps_count_ending=True,
    retry_after_capacity=5,
    retry_after_concurrency=5,
    end_booting="drain",
    pipecat_shows_created=False,
    pipecat_idle_applies=True,
    pipecat_fields={
        "idle": "idle_timeout_seconds",
        "max": "max_duration_seconds",
        "quality": "quality",
        "relay": "relay_type",
    },
    default_quality="standard",
    audio_source_values=("track", "data_stream"),
    worker_token_required=True,
    metadata_limit_bytes=8192,
    reserved_key_param="metadata",
    unknown_body_fields="ignore",
    unset_fields="null",
    end_reason_field=True,
    max_duration_from="first_frame",
    billable_rounding="ceil",
    plan_max_duration={"enterprise": 3600, "scale": 1800, "starter": 900, "free": 600},
    idle_max_tie="max_duration",
    idempotency_scope="key",
    idempotency_body_match="canonical",
    idempotency_replay_header=False,
    bad_image="refuse_at_upload",
    avatar_optional_fields={
        "instructions": "instructions",
        "voice_style": "voice_instructions",
        "failure_reason": "failure_reason",
        "from_photo": "from_photo_upload",
    },
    default_avatar_name="filename",
    run_status_names={
        "queued": "queued",
        "running": "running",
        "succeeded": "succeeded",
        "failed": "failed",
        "canceled": "canceled",
        "deleted": "deleted",
    },
    run_event_types={
        "queued": "run.queued",
        "started": "run.started",
        "progress": "run.progress",
        "output": "run.output",
        "succeeded": "run.succeeded",
        "failed": "run.failed",
        "canceled": "run.canceled",
    },
    deletion_status_names={"queued": "queued", "running": "running", "done": "succeeded"},
    operation_names={"text": "generate", "media": "render"},
    output_role="output",
    output_file_type="file",
    cancel_path="slash",
    cancel_terminal="conflict",
    delete_scope="runs:write",
    delete_repeat="same",
    deleted_status="keep",
    plan_refusal_code="plan.enterprise_required",
    external_id_default="empty",
    optional_object_field=True,
    lifecycle_part_id="run",
    asset_content="inline",
    asset_scope_value="run_output",
    asset_inapplicable="null",
    list_deleted_assets=True,
    non_run_scope="unrestricted",
    bearer_case_insensitive=True,
    www_authenticate=True,
    honor_client_request_id=False,
    unauthenticated_unknown_route=401,
    usage_tz_param="timezone",
    naive_timestamps="utc",
    speech_modes_always=False,
    usage_extra_fields={
        "embeds": "embed_usage",
        "operations": "credits_by_operation",
        "model_charges": "recent_model_charges",
        "studio_charges": "recent_studio_charges",
    },
    public_style="a",
    relay={
        "protocol": "pipecat-frames/1",
        "audio_sample_rate": 16000,
        "decoded_video_format": "rgb24",
        "video_encoding": "raw",
    },
)

READING_B = Reading(
    name="b",
    create_status={"sessions": 201, "pipecat": 201, "avatars": 202, "runs": 202},
    end_transition_status=202,
    cross_tenant_status=404,
    validation_status=422,
    body_ref_status=422,
    avatar_not_ready_status=422,
    page_size_policy="clamp",
    default_page_size=10,
    list_order="oldest_first",
    unknown_cursor="empty",
    session_status_filter="state",
    avatar_filter_params=("source", "search"),
    run_events_cursor="offset",
    models_has_more=True,
    rate_limiter="token_bucket",
    rate_headers="always",
    rate_reset="epoch",
    rate_limit_pipecat=True,
    caps_count_queued=False,
    caps_count_ending=False,
    retry_after_capacity=10,
    retry_after_concurrency=15,
    end_booting="cancel",
    pipecat_shows_created=True,
    pipecat_idle_applies=False,
    pipecat_fields={
        "idle": "idle_timeout",
        "max": "max_duration",
        "quality": "quality",
        "relay": "relay",
    },
    default_quality="mock",
    audio_source_values=("data_stream", "track"),
    worker_token_required=False,
    metadata_limit_bytes=8000,
    reserved_key_param="key",
    unknown_body_fields="refuse",
    unset_fields="omit",
    end_reason_field=False,
    max_duration_from="started",
    billable_rounding="floor",
    plan_max_duration={"enterprise": 3600, "scale": 900, "starter": 600, "free": 300},
    idle_max_tie="idle_timeout",
    idempotency_scope="organization",
    idempotency_body_match="raw",
    idempotency_replay_header=True,
    bad_image="fail_in_fitting",
    avatar_optional_fields={
        "instructions": "conversation_instructions",
        "voice_style": "voice_style",
        "failure_reason": "build_error",
        "from_photo": "uploaded_from_photo",
    },
    default_avatar_name="untitled",
    run_status_names={
        "queued": "pending",
        "running": "in_progress",
        "succeeded": "completed",
        "failed": "errored",
        "canceled": "cancelled",
        "deleted": "deleted",
    },
    run_event_types={
        "queued": "queued",
        "started": "started",
        "progress": "progress",
        "output": "output.completed",
        "succeeded": "completed",
        "failed": "errored",
        "canceled": "cancelled",
    },
    deletion_status_names={"queued": "pending", "running": "purging", "done": "completed"},
    operation_names={"text": "text-generation", "media": "avatar-video"},
    output_role="result",
    output_file_type="asset",
    cancel_path="colon",
    cancel_terminal="unchanged",
    delete_scope="unrestricted",
    delete_repeat="conflict",
    deleted_status="deleted",
    plan_refusal_code="feature_unavailable",
    external_id_default="run_id",
    optional_object_field=False,
    lifecycle_part_id="main",
    asset_content="link",
    asset_scope_value="output",
    asset_inapplicable="zero",
    list_deleted_assets=False,
    non_run_scope="any",
    bearer_case_insensitive=False,
    www_authenticate=False,
    honor_client_request_id=True,
    unauthenticated_unknown_route=404,
    usage_tz_param="tz",
    naive_timestamps="refuse",
    speech_modes_always=True,
    usage_extra_fields={
        "embeds": "embeds",
        "operations": "operation_credits",
        "model_charges": "latest_model_charges",
        "studio_charges": "latest_studio_charges",
    },
    public_style="b",
    relay={
        "protocol": "protobuf",
        "audio_sample_rate": 24000,
        "decoded_video_format": "i420",
        "video_encoding": "h264",
    },
)

READINGS: dict[str, Reading] = {"a": READING_A, "b": READING_B}
