"""Metering: what a finished session costs, and how charges are named (GAP-BILL-1, GAP-USAGE-1).

Why pure functions over the config: the price of a session is a function of its canonical usage
(``SessionUsage``) and of ``BillingConfig`` alone, so a scenario that changes a price or a
multiplier changes the bill and nothing else has to know. A session becomes one or two charge
lines: the realtime avatar (``session.realtime``, attributed to no model) and, for surfaces where
the platform manages speech, the internal speech model (``session.speech``). Internal models are
excluded from ``by_model`` but counted everywhere else.
"""

from __future__ import annotations

from typing import NamedTuple

from sim.config import BillingConfig
from sim.ports import SessionUsage

__all__ = [
    "SESSION_REALTIME_OPERATION",
    "SESSION_SPEECH_OPERATION",
    "SessionChargeLine",
    "run_operation",
    "session_charge_lines",
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


class SessionChargeLine(NamedTuple):
    operation: str
    credits: int
    model: str | None
    internal: bool
    billable_seconds: int  # only the realtime line carries the session's seconds


def session_charge_lines(config: BillingConfig, usage: SessionUsage) -> list[SessionChargeLine]:
    """The charge lines of one finished session; empty when nothing was billable."""
    seconds = usage.billable_seconds
    if seconds <= 0:
        return []
    try:
        multiplier = config.quality_multipliers[usage.quality]
    except KeyError:
        raise ValueError(f"no quality multiplier for {usage.quality!r}") from None
    # Positional (operation, credits, model, internal, billable_seconds): a NamedTuple built by
    # keyword costs several times more, and every finished session builds one or two.
    lines = [
        SessionChargeLine(
            SESSION_REALTIME_OPERATION,
            seconds * config.session_credits_per_second * multiplier,
            None,
            False,
            seconds,
        )
    ]
    if speech_billing_mode(config, usage.billing_surface) == "platform_managed":
        lines.append(
            SessionChargeLine(
                SESSION_SPEECH_OPERATION,
                seconds * config.platform_speech_credits_per_second,
                config.platform_speech_model,
                True,
                0,
            )
        )
    return lines
