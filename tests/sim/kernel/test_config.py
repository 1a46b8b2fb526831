"""One typed configuration with the seed's values as defaults (SIM-6)."""

from __future__ import annotations

from datetime import datetime

import pytest
from pydantic import ValidationError

from sim.config import LimitsConfig, SimConfig


@pytest.mark.req("SIM-6", "LIM-1", "LIM-2", "LIM-3", "LIM-8")
def test_defaults_are_the_seed_limits() -> None:
    config = SimConfig()
    limits = config.limits
    assert limits.max_duration_default_seconds == 600
    assert limits.max_duration_ceiling_seconds == 3600
    assert limits.idle_timeout_default_seconds == 30
    assert (limits.idle_timeout_min_seconds, limits.idle_timeout_max_seconds) == (1, 600)
    assert limits.startup_timeout_seconds == 15
    assert limits.metadata_max_bytes == 8192
    assert limits.concurrent_sessions_per_key == 1
    assert limits.concurrent_sessions_per_org_default == 5
    assert limits.concurrent_sessions_per_org_ceiling == 20
    assert limits.rate.session_creates_per_window == 10
    assert limits.rate.window_seconds == 60
    assert limits.idempotency_window_seconds == 24 * 3600
    assert (limits.page_size_min, limits.page_size_max) == (1, 100)
    assert limits.run_events_page_size_max == 500
    assert config.billing.signup_grant_usd == 20
    assert config.billing.signup_grant_credits * config.billing.usd_per_credit == pytest.approx(20)


@pytest.mark.req("SIM-6")
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"limits": {"startup_timeout_seconds": -1}}, "startup_timeout_seconds"),
        ({"limits": {"idle_timeout_default_seconds": 700}}, "idle_timeout_default_seconds"),
        ({"scheduler": {"workers": -3}}, "workers"),
        ({"avatars": {"fitting_failure_probability": 1.5}}, "fitting_failure_probability"),
        ({"limits": {"concurrent_sessions_per_org_default": 30}}, "ceiling"),
        ({"scheduler": {"worker_boot": {"kind": "gamma"}}}, "worker_boot"),
        ({"bogus": 1}, "bogus"),
    ],
)
def test_invalid_values_are_refused_naming_the_field(
    overrides: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as excinfo:
        SimConfig.model_validate(overrides)
    assert field in str(excinfo.value)


@pytest.mark.req("SIM-6")
def test_epoch_must_be_utc() -> None:
    with pytest.raises(ValidationError, match="epoch"):
        SimConfig(epoch=datetime(2026, 1, 1))


@pytest.mark.req("SIM-6", "LIM-2")
def test_plans_cannot_exceed_the_org_ceiling() -> None:
    plans = SimConfig().billing.plans
    too_many = plans[0].model_copy(update={"concurrent_sessions": 25})
    with pytest.raises(ValidationError, match="ceiling"):
        SimConfig.model_validate(
            {"billing": {"plans": [too_many.model_dump(), *[p.model_dump() for p in plans[1:]]]}}
        )
    assert LimitsConfig().concurrent_sessions_per_org_ceiling == 20
