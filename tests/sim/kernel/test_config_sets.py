"""The quality tiers and billing surfaces are defined once, in the configuration (SIM-6)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import sim.sessions.validation as validation
from sim.config import BILLING_SURFACES, QUALITIES, BillingConfig, SessionConfig
from sim.sessions import service


@pytest.mark.req("SIM-6", "RES-SESS-7")
def test_every_module_uses_the_configured_sets() -> None:
    assert validation.QUALITIES is QUALITIES
    assert service.BILLING_SURFACES is BILLING_SURFACES
    assert list(BillingConfig().quality_multipliers) == list(QUALITIES)
    assert set(BillingConfig().platform_managed_surfaces) <= set(BILLING_SURFACES)


@pytest.mark.req("SIM-6", "RES-SESS-7")
@pytest.mark.parametrize(
    "billing",
    [
        {"quality_multipliers": {"mock": 0, "lite": 1, "standard": 2}},  # pro has no price
        {"quality_multipliers": {"mock": 0, "lite": 1, "standard": 2, "pro": 4, "ultra": 9}},
        {"platform_managed_surfaces": ["playground", "billboard"]},
    ],
)
def test_prices_and_surfaces_outside_the_sets_are_refused(billing: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        BillingConfig.model_validate(billing)
    with pytest.raises(ValidationError):
        SessionConfig.model_validate({"default_quality": "ultra"})
