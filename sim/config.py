"""The one typed configuration of the simulated service.

Every limit, price, plan, duration and distribution the simulator uses lives here, with the seed
contract's values as defaults (gap choices are documented in ``spec/DECISIONS.md`` under the id
named in each field's description). A number from the seed appears in code exactly once: here.
Everything else reads it from a ``SimConfig`` instance, so a scenario can change any of it.

Invalid values are refused by pydantic with a message that names the field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sim.clock import LAST_INSTANT
from sim.distributions import Constant, Distribution, FrozenData, LogNormal

__all__ = [
    "BILLING_SURFACES",
    "QUALITIES",
    "AdminConfig",
    "AvatarConfig",
    "BillingConfig",
    "HistoryConfig",
    "LimitsConfig",
    "ModelConfig",
    "PlanConfig",
    "RateLimitConfig",
    "RunsConfig",
    "SchedulerConfig",
    "SessionConfig",
    "SimConfig",
    "WebhookConfig",
]


#: The session quality tiers (RES-SESS-7); each has a billing multiplier.
QUALITIES: tuple[str, ...] = ("mock", "lite", "standard", "pro")

#: The services that create sessions, used to group usage (RES-SESS-7).
BILLING_SURFACES: tuple[str, ...] = (
    "api",
    "playground",
    "embed",
    "share",
    "public_demo",
    "pipecat",
    "agora",
    "video_generation",
)

Quality = Literal["mock", "lite", "standard", "pro"]


# --------------------------------------------------------------------------------------------
# Limits stated by the seed contract (section 8) and the session request ranges.
# --------------------------------------------------------------------------------------------


class RateLimitConfig(FrozenData):
    """A sliding-window limit per API key (GAP-LIM-1). ``None`` disables a limit."""

    window_seconds: float = Field(default=60.0, gt=0)
    session_creates_per_window: int | None = Field(default=10, ge=1, description="seed, LIM-3")
    run_creates_per_window: int | None = Field(default=60, ge=1, description="GAP-LIM-1")
    avatar_creates_per_window: int | None = Field(default=10, ge=1, description="GAP-LIM-1")
    run_deletes_per_window: int | None = Field(default=30, ge=1, description="GAP-LIM-1")
    reads_per_window: int | None = Field(default=None, ge=1, description="GAP-LIM-1: off")


class LimitsConfig(FrozenData):
    idle_timeout_default_seconds: int = Field(default=30, ge=1)
    idle_timeout_min_seconds: int = Field(default=1, ge=1)
    idle_timeout_max_seconds: int = Field(default=600, ge=1)
    max_duration_default_seconds: int = Field(default=600, ge=1)
    max_duration_min_seconds: int = Field(default=1, ge=1)
    max_duration_ceiling_seconds: int = Field(default=3600, ge=1)
    startup_timeout_seconds: float = Field(default=15.0, gt=0)
    metadata_max_bytes: int = Field(default=8 * 1024, ge=1)
    reserved_metadata_prefix: str = "_avatar."
    debug_record_metadata_key: str = "_avatar.debug_record"
    debug_record_retention_seconds: float = Field(default=24 * 3600.0, gt=0)
    idempotency_window_seconds: float = Field(default=24 * 3600.0, gt=0)
    idempotency_key_min_length: int = Field(default=1, ge=1)
    idempotency_key_max_length: int = Field(default=255, ge=1)
    concurrent_sessions_per_key: int = Field(default=1, ge=1)
    concurrent_sessions_per_org_default: int = Field(default=5, ge=1)
    concurrent_sessions_per_org_ceiling: int = Field(default=20, ge=1)
    page_size_min: int = Field(default=1, ge=1)
    page_size_max: int = Field(default=100, ge=1)
    page_size_default: int = Field(default=20, ge=1)
    avatar_page_size_default: int = Field(default=20, ge=1)
    run_events_page_size_max: int = Field(default=500, ge=1)
    run_events_page_size_default: int = Field(default=100, ge=1)
    cursor_max_length: int = Field(default=40, ge=1)
    request_body_max_bytes: int = Field(default=1024 * 1024, ge=1, description="GAP-ERR-1")
    request_headers_max_bytes: int = Field(default=8 * 1024, ge=1, description="GAP-ERR-3")
    json_max_depth: int = Field(
        default=64,
        ge=1,
        description="GAP-ERR-6: deepest nesting of arrays and objects in a request",
    )
    rate: RateLimitConfig = RateLimitConfig()

    @model_validator(mode="after")
    def _consistent(self) -> LimitsConfig:
        if not (
            self.idle_timeout_min_seconds
            <= self.idle_timeout_default_seconds
            <= self.idle_timeout_max_seconds
        ):
            raise ValueError("idle_timeout_default_seconds must lie within its range")
        if not (
            self.max_duration_min_seconds
            <= self.max_duration_default_seconds
            <= self.max_duration_ceiling_seconds
        ):
            raise ValueError("max_duration_default_seconds must lie within its range")
        if self.concurrent_sessions_per_org_default > self.concurrent_sessions_per_org_ceiling:
            raise ValueError("concurrent_sessions_per_org_default exceeds the ceiling")
        if not (self.page_size_min <= self.page_size_default <= self.page_size_max):
            raise ValueError("page_size_default must lie within the page size range")
        return self


# --------------------------------------------------------------------------------------------
# The simulator's own parameters: workers, timers, audio, faults.
# --------------------------------------------------------------------------------------------


class SchedulerConfig(FrozenData):
    """Worker pool and admission control (SIM-3, GAP-LIM-3)."""

    workers: int = Field(default=8, ge=0)
    admission_policy: Literal["queue", "reject"] = "queue"
    max_queue_length: int = Field(default=16, ge=0, description="bound of the wait queue")
    worker_boot: Distribution = LogNormal(median=2.0, sigma=0.35, cap=12.0)
    first_frame_latency: Distribution = LogNormal(median=0.6, sigma=0.3, cap=5.0)
    worker_restart_seconds: float = Field(default=30.0, ge=0)
    provision_lead_seconds: float = Field(
        default=0.0, ge=0, description="how long a worker asked for takes to join the pool"
    )


class SessionConfig(FrozenData):
    """Session runtime behaviour (GAP-SES-3, GAP-SES-5)."""

    heartbeat_interval_seconds: float = Field(default=10.0, gt=0)
    heartbeat_loss_limit_seconds: float = Field(
        default=30.0, gt=0, description="silence after which a worker is declared lost"
    )
    frames_per_second: int = Field(default=25, ge=1)
    drain_base_seconds: float = Field(default=1.0, ge=0)
    drain_max_seconds: float = Field(default=5.0, ge=0)
    default_quality: Quality = "standard"
    default_audio_source: Literal["track", "data_stream"] = "track"
    video_track_name: str = "service-avatar"
    audio_track_name: str = "service-avatar-audio"
    barge_in_rpc: str = "lk.clear_buffer"
    relay_credential_ttl_seconds: float = Field(default=300.0, gt=0)
    relay_audio_sample_rate: int = Field(default=16000, ge=8000)


class AvatarConfig(FrozenData):
    """Portrait uploads and fitting (GAP-AV-3)."""

    fitting_time: Distribution = LogNormal(median=45.0, sigma=0.4, cap=600.0)
    fitting_failure_probability: float = Field(default=0.05, ge=0, le=1)
    image_min_side_px: int = Field(default=64, ge=1)
    image_max_side_px: int = Field(default=8192, ge=1)
    image_max_bytes: int = Field(default=10 * 1024 * 1024, ge=1)
    name_max_length: int = Field(default=100, ge=1)
    query_max_length: int = Field(
        default=100, ge=1, description="GAP-AV-2: longest name-or-id search filter (q)"
    )


# --------------------------------------------------------------------------------------------
# Billing: credits, plans, prices (GAP-BILL-*).
# --------------------------------------------------------------------------------------------


class PlanConfig(FrozenData):
    key: str
    name: str
    price_usd_month: float | None = Field(default=None, ge=0)
    included_credits: int = Field(ge=0)
    rollover_cap_credits: int = Field(ge=0)
    max_session_duration_seconds: int = Field(ge=1)
    concurrent_sessions: int = Field(ge=1)
    low_balance_threshold_credits: int = Field(ge=0)
    run_deletion: bool = False

    def to_resource(self) -> dict[str, Any]:
        """The plan as ``GET /v1/billing/plans`` lists it (GAP-PUB-2)."""
        price = self.price_usd_month
        return {
            "key": self.key,
            "name": self.name,
            "price_usd_month": int(price) if price is not None and price.is_integer() else price,
            "included_credits": self.included_credits,
            "rollover_cap_credits": self.rollover_cap_credits,
            "max_session_duration_seconds": self.max_session_duration_seconds,
            "concurrent_sessions": self.concurrent_sessions,
            "low_balance_threshold_credits": self.low_balance_threshold_credits,
            "run_deletion": self.run_deletion,
        }


def _default_plans() -> tuple[PlanConfig, ...]:
    return (
        PlanConfig(key="free", name="Free", price_usd_month=0, included_credits=0,
                   rollover_cap_credits=0, max_session_duration_seconds=600,
                   concurrent_sessions=5, low_balance_threshold_credits=2_000),
        PlanConfig(key="starter", name="Starter", price_usd_month=49, included_credits=50_000,
                   rollover_cap_credits=0, max_session_duration_seconds=1_800,
                   concurrent_sessions=5, low_balance_threshold_credits=5_000),
        PlanConfig(key="pro", name="Pro", price_usd_month=199, included_credits=200_000,
                   rollover_cap_credits=200_000, max_session_duration_seconds=3_600,
                   concurrent_sessions=5, low_balance_threshold_credits=20_000),
        PlanConfig(key="enterprise", name="Enterprise", price_usd_month=None,
                   included_credits=1_000_000, rollover_cap_credits=1_000_000,
                   max_session_duration_seconds=3_600, concurrent_sessions=10,
                   low_balance_threshold_credits=100_000, run_deletion=True),
    )  # fmt: skip


class BillingConfig(FrozenData):
    usd_per_credit: float = Field(default=0.001, gt=0)
    signup_grant_usd: float = Field(default=20.0, ge=0, description="seed, LIM-8")
    session_credits_per_second: int = Field(default=1, ge=0)
    quality_multipliers: dict[str, int] = Field(
        default_factory=lambda: dict(zip(QUALITIES, (0, 1, 2, 4), strict=True))
    )
    platform_speech_credits_per_second: int = Field(default=1, ge=0)
    platform_speech_model: str = "sim/internal-speech"
    platform_managed_surfaces: tuple[str, ...] = ("playground", "embed", "share", "public_demo")
    session_pricing_version: str = Field(
        default="sessions-2026-01", description="pricing_version on session ledger rows (SIM-5)"
    )
    min_session_start_credits: int = Field(default=60, ge=0)
    recent_charges_listed: int = Field(default=10, ge=1)
    usage_window_max_days: int = Field(default=366, ge=1, description="GAP-USAGE-2")
    usage_timezone_max_length: int = Field(default=64, ge=1, description="seed, EP-USAGE-1")
    plans: tuple[PlanConfig, ...] = Field(default_factory=_default_plans)

    @property
    def signup_grant_credits(self) -> int:
        return round(self.signup_grant_usd / self.usd_per_credit)

    @cached_property
    def _plans_by_key(self) -> dict[str, PlanConfig]:
        return {plan.key: plan for plan in self.plans}

    def plan(self, key: str) -> PlanConfig:
        """The plan named ``key``; ``KeyError`` for an unknown one."""
        return self._plans_by_key[key]

    @field_validator("quality_multipliers")
    @classmethod
    def _every_quality_priced(cls, value: dict[str, int]) -> dict[str, int]:
        if sorted(value) != sorted(QUALITIES) or any(m < 0 for m in value.values()):
            raise ValueError(f"give one multiplier >= 0 for each of {', '.join(QUALITIES)}")
        return value

    @field_validator("platform_managed_surfaces")
    @classmethod
    def _known_surfaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(BILLING_SURFACES))
        if unknown:
            raise ValueError(f"unknown billing surface(s) {', '.join(unknown)}")
        return value

    @field_validator("plans")
    @classmethod
    def _unique_plan_keys(cls, plans: tuple[PlanConfig, ...]) -> tuple[PlanConfig, ...]:
        keys = [p.key for p in plans]
        if len(keys) != len(set(keys)) or not keys:
            raise ValueError("plan keys must be unique and at least one plan is required")
        return plans


# --------------------------------------------------------------------------------------------
# Model runs (GAP-RUN-*, GAP-MODEL-1).
# --------------------------------------------------------------------------------------------


class ModelConfig(FrozenData):
    """Per-model simulation parameters; the catalog entry itself lives in sim.models."""

    duration: Distribution
    failure_probability: float = Field(default=0.0, ge=0, le=1)
    credits_per_unit: float = Field(
        default=1.0, ge=0, description="price per pricing unit of the catalog entry (GAP-BILL-4)"
    )
    pricing_version: str = Field(default="2026-01", min_length=1)


def _default_models() -> dict[str, ModelConfig]:
    return {
        "sim/echo-text": ModelConfig(
            duration=LogNormal(median=1.5, sigma=0.3, cap=30.0), credits_per_unit=0.01
        ),
        "sim/speech": ModelConfig(
            duration=LogNormal(median=4.0, sigma=0.35, cap=60.0), credits_per_unit=2.0
        ),
        "sim/portrait-video": ModelConfig(
            duration=LogNormal(median=40.0, sigma=0.4, cap=600.0),
            failure_probability=0.02,
            credits_per_unit=10.0,
        ),
        "sim/internal-speech": ModelConfig(duration=Constant(value=1.0), credits_per_unit=1.0),
        "sim/retired-model": ModelConfig(duration=Constant(value=1.0), credits_per_unit=5.0),
    }


class RunsConfig(FrozenData):
    run_workers: int = Field(default=4, ge=0, description="concurrent run executions")
    capacity_wait_seconds: float = Field(default=120.0, gt=0)
    max_queued_runs_per_org: int = Field(default=50, ge=1)
    max_pending_purges: int = Field(default=100, ge=1)
    purge_time: Distribution = Constant(value=5.0)
    external_id_max_length: int = Field(default=128, ge=1)
    progress_updates: int = Field(default=4, ge=0, description="run.progress events per run")
    speech_characters_per_second: float = Field(
        default=15.0, gt=0, description="text length to audio length for speech models"
    )
    audio_sample_rate: int = Field(default=16000, ge=8000, description="generated WAV outputs")
    models: dict[str, ModelConfig] = Field(default_factory=_default_models)


class AdminConfig(FrozenData):
    """Bounds of the simulator's own controls under ``/_sim`` (GAP-SERVE-3).

    No input to a control may leave the platform unable to answer: the clock moves at most
    ``clock_advance_max_seconds`` per call, a duration a control accepts (audio, slow start-up,
    heartbeat loss) is at most ``duration_max_seconds``, and the worker pool at most
    ``workers_max``.

    What the reads under ``/_sim`` keep for a watcher (the served console): the worker pool read
    every ``pool_sample_seconds`` of simulated time once served mode starts its sampler, the
    newest ``pool_samples_kept`` readings, and the newest ``request_log_size`` HTTP requests the
    facade answered (kept only when an admin token is configured, since nothing else reads them).
    Served mode stretches the pool's grid on a fast clock (``pool_sample_wall_seconds`` of its
    options).
    """

    clock_advance_max_seconds: float = Field(default=366 * 86400.0, gt=0)
    duration_max_seconds: float = Field(default=366 * 86400.0, gt=0)
    workers_max: int = Field(default=10_000, ge=0)
    pool_sample_seconds: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    pool_samples_kept: int = Field(default=720, ge=1)
    request_log_size: int = Field(default=1000, ge=0)


class WebhookConfig(FrozenData):
    """Delivery schedule (GAP-EV-2)."""

    retry_delays_seconds: tuple[float, ...] = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)
    attempt_timeout_seconds: float = Field(default=15.0, gt=0)


class HistoryConfig(FrozenData):
    """What the platform keeps of its own past: its records, never its behaviour (SIM-2).

    The service's state (sessions, runs, the ledger) is always kept: the contract reads it. These
    switches cover the records nobody reads through the API, so long runs can drop them: the event
    log (subscribers such as webhooks still see every event as it happens), the transitions of each
    session, and the API log, which is a ring of the last ``api_log_size`` calls.
    """

    events: bool = Field(default=True, description="keep every event in the event log")
    transitions: bool = Field(default=True, description="keep every session transition")
    api_log_size: int | None = Field(
        default=100_000, ge=0, description="calls the API log keeps (the newest); None: all"
    )


# --------------------------------------------------------------------------------------------


class SimConfig(FrozenData):
    """Everything the simulated service needs; defaults reproduce the seed contract."""

    seed: int = 0
    epoch: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    public_base_url: str = "http://127.0.0.1:8080"
    limits: LimitsConfig = LimitsConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    sessions: SessionConfig = SessionConfig()
    avatars: AvatarConfig = AvatarConfig()
    billing: BillingConfig = BillingConfig()
    runs: RunsConfig = RunsConfig()
    webhooks: WebhookConfig = WebhookConfig()
    history: HistoryConfig = HistoryConfig()
    admin: AdminConfig = AdminConfig()

    @field_validator("epoch")
    @classmethod
    def _utc_epoch(cls, value: datetime) -> datetime:
        if value.tzinfo is None or value.utcoffset() != UTC.utcoffset(None):
            raise ValueError("epoch must be an aware UTC datetime")
        if value >= LAST_INSTANT:
            raise ValueError(f"epoch must be before {LAST_INSTANT.isoformat()}")
        return value

    @model_validator(mode="after")
    def _plans_within_limits(self) -> SimConfig:
        for plan in self.billing.plans:
            if plan.concurrent_sessions > self.limits.concurrent_sessions_per_org_ceiling:
                raise ValueError(
                    f"billing.plans[{plan.key}].concurrent_sessions exceeds the org ceiling"
                )
            if plan.max_session_duration_seconds > self.limits.max_duration_ceiling_seconds:
                raise ValueError(
                    f"billing.plans[{plan.key}].max_session_duration_seconds exceeds the ceiling"
                )
        return self
