"""The seed's numbers a deployment is held to, read from the one configuration.

Why from ``sim.config``: a number from the seed appears once in the code, as a default of the
typed configuration (the defaults are the seed's values). The harness reads those defaults,
never a running simulator's configuration, so a deployment is judged by the seed whatever the
simulator next to it was configured with.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.config import QUALITIES, LimitsConfig, RateLimitConfig

__all__ = ["SEED", "SeedLimits"]


@dataclass(frozen=True, slots=True)
class SeedLimits:
    idle_default: int
    idle_min: int
    idle_max: int
    max_duration_default: int
    max_duration_min: int
    max_duration_ceiling: int
    startup_timeout_seconds: float
    metadata_max_bytes: int
    reserved_metadata_prefix: str
    debug_record_key: str
    idempotency_key_min: int
    idempotency_key_max: int
    idempotency_window_seconds: float
    page_min: int
    page_max: int
    avatar_page_default: int
    run_events_page_max: int
    cursor_max_length: int
    creates_per_window: int
    rate_window_seconds: float
    sessions_per_key: int
    sessions_per_org_default: int
    sessions_per_org_ceiling: int
    qualities: tuple[str, ...]


def _from_defaults() -> SeedLimits:
    limits, rate = LimitsConfig(), RateLimitConfig()
    assert rate.session_creates_per_window is not None
    return SeedLimits(
        idle_default=limits.idle_timeout_default_seconds,
        idle_min=limits.idle_timeout_min_seconds,
        idle_max=limits.idle_timeout_max_seconds,
        max_duration_default=limits.max_duration_default_seconds,
        max_duration_min=limits.max_duration_min_seconds,
        max_duration_ceiling=limits.max_duration_ceiling_seconds,
        startup_timeout_seconds=limits.startup_timeout_seconds,
        metadata_max_bytes=limits.metadata_max_bytes,
        reserved_metadata_prefix=limits.reserved_metadata_prefix,
        debug_record_key=limits.debug_record_metadata_key,
        idempotency_key_min=limits.idempotency_key_min_length,
        idempotency_key_max=limits.idempotency_key_max_length,
        idempotency_window_seconds=limits.idempotency_window_seconds,
        page_min=limits.page_size_min,
        page_max=limits.page_size_max,
        avatar_page_default=limits.avatar_page_size_default,
        run_events_page_max=limits.run_events_page_size_max,
        cursor_max_length=limits.cursor_max_length,
        creates_per_window=rate.session_creates_per_window,
        rate_window_seconds=rate.window_seconds,
        sessions_per_key=limits.concurrent_sessions_per_key,
        sessions_per_org_default=limits.concurrent_sessions_per_org_default,
        sessions_per_org_ceiling=limits.concurrent_sessions_per_org_ceiling,
        qualities=QUALITIES,
    )


#: The seed's limits (section 8 and the request ranges of section 4).
SEED = _from_defaults()
