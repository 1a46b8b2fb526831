"""The configuration compiled once: each value is the configuration's (SIM-6)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields

import pytest

from sim.config import SimConfig
from sim.kernel import Kernel
from sim.settings import Settings

_DERIVED = {"highest_low_balance_threshold", "longest_session_seconds", "never_clamped_seconds"}


@pytest.mark.req("SIM-6")
def test_every_compiled_value_is_the_configurations_or_derived_from_it() -> None:
    """Every value differs from its default here, so a field copied from the wrong place (or
    left at a default) shows: the compiled value is the configured one, by name."""
    config = SimConfig.model_validate(
        {
            "limits": {
                "idle_timeout_default_seconds": 31, "idle_timeout_min_seconds": 2,
                "idle_timeout_max_seconds": 601, "max_duration_default_seconds": 601,
                "max_duration_min_seconds": 2, "max_duration_ceiling_seconds": 3601,
                "startup_timeout_seconds": 16.0, "concurrent_sessions_per_key": 2,
                "json_max_depth": 65,
            },
            "sessions": {
                "frames_per_second": 26, "heartbeat_interval_seconds": 11.0,
                "drain_base_seconds": 1.5, "drain_max_seconds": 5.5, "default_quality": "pro",
                "default_audio_source": "data_stream",
            },
            "billing": {"min_session_start_credits": 61},
        }
    )  # fmt: skip
    settings = Kernel.create(config).settings
    sections = (config.limits, config.sessions, config.billing)
    for field in fields(Settings):
        if field.name in _DERIVED:
            continue
        (owner,) = [section for section in sections if field.name in type(section).model_fields]
        default = getattr(type(owner)(), field.name)
        assert getattr(settings, field.name) == getattr(owner, field.name) != default, field.name
    plans = config.billing.plans
    assert dict(settings.longest_session_seconds) == {
        plan.key: plan.max_session_duration_seconds for plan in plans
    }
    assert settings.never_clamped_seconds == min(p.max_session_duration_seconds for p in plans)
    assert settings.highest_low_balance_threshold == max(
        p.low_balance_threshold_credits for p in plans
    )
    with pytest.raises(FrozenInstanceError):
        settings.json_max_depth = 1  # type: ignore[misc]
