"""Metering: what a finished session costs, and how charges are named (GAP-BILL-1, GAP-USAGE-1).

Why pure functions over the config: the price of a session is a function of its canonical usage
(``SessionUsage``: its kind and billable seconds) and of ``BillingConfig`` alone, so a scenario
that changes a price or a multiplier changes the bill and nothing else has to know. A session
becomes one or two charge lines: the realtime avatar (``session.realtime``, attributed to no
model) and, for surfaces where the platform manages speech, the internal speech model
(``session.speech``). Internal models are excluded from ``by_model`` but counted everywhere else.
"""

from __future__ import annotations

from sim.billing.rules import Attribution, TariffLine, attribute
from sim.config import BillingConfig

__all__ = [
    "SESSION_REALTIME_OPERATION",
    "SESSION_SPEECH_OPERATION",
    "run_operation",
    "session_tariff",
    "speech_billing_mode",
]

SESSION_REALTIME_OPERATION = "session.realtime"
SESSION_SPEECH_OPERATION = "session.speech"


def speech_billing_mode(config: BillingConfig, billing_surface: str) -> str:
    """``platform_managed`` for the surfaces where the platform supplies speech, else customer."""
    if billing_surface in config.platform_managed_surfaces:
        return "platform_managed"
    return "customer_managed"


def run_operation(model: str, operation: str) -> str:
    """The durable billable operation of a run: ``run.<model>.<operation>`` (GAP-USAGE-1)."""
    return f"run.{model}.{operation}"


def session_tariff(
    config: BillingConfig, quality: str, billing_surface: str, embed_id: str | None, avatar_id: str
) -> tuple[TariffLine, ...]:
    """The charge lines of a session of this kind, per billable second, each with its
    attribution: the realtime line (carrying the session's seconds) and, where the platform
    manages speech, the internal speech line. ``Ledger.charge_session`` writes one row each.

    Sessions of the same kind share it, so ``Billing`` keeps it per kind instead of pricing and
    attributing every finished session again."""
    try:
        multiplier = config.quality_multipliers[quality]
    except KeyError:
        raise ValueError(f"no quality multiplier for {quality!r}") from None
    mode = speech_billing_mode(config, billing_surface)

    def attributed(operation: str, model: str | None = None) -> Attribution:
        return attribute(
            model=model,
            billing_surface=billing_surface,
            quality=quality,
            speech_billing_mode=mode,
            embed_id=embed_id,
            avatar_id=avatar_id,
            operation=operation,
            pricing_version=config.session_pricing_version,
        )

    lines: list[TariffLine] = [
        (
            config.session_credits_per_second * multiplier,
            False,
            True,
            attributed(SESSION_REALTIME_OPERATION),
        )
    ]
    if mode == "platform_managed":
        lines.append(
            (
                config.platform_speech_credits_per_second,
                True,
                False,
                attributed(SESSION_SPEECH_OPERATION, config.platform_speech_model),
            )
        )
    return tuple(lines)
