"""Service limits a scenario can switch off, and what "off" does to the service configuration.

Why a switch rather than a big number in ``config``: a theory check (Erlang B, Erlang C, M/M/c+D)
is only valid when nothing but the pool refuses, waits or ends a session. Writing
``concurrency: 20`` or ``startup_timeout_seconds: 100000`` by hand leaves a limit that a long or
busy enough run can still reach, silently losing sessions to it. ``off`` is mapped here, once, to
a value the run provably cannot reach: a count no run can accumulate, or a duration longer than
the whole simulated run (its *horizon*). The service keeps the seed's values for every limit
left ``on``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from sim.config import SimConfig

__all__ = ["UNREACHABLE_COUNT", "Limits", "Switch", "lift"]

#: A concurrency or queue bound no run can reach (more than 2 billion live sessions).
UNREACHABLE_COUNT = 2**31 - 1


def _switch(value: object) -> object:
    # YAML 1.1 reads a bare `off` as false and `on` as true.
    if value is False:
        return "off"
    if value is True:
        return "on"
    return value


Switch = Annotated[Literal["on", "off"], BeforeValidator(_switch)]


class Limits(BaseModel):
    """``off`` lifts a limit beyond reach for the whole run; ``on`` keeps the configured one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: Switch = Field(
        default="on", description="per-key and per-organization concurrent-session caps"
    )
    queue: Switch = Field(default="on", description="the bound of the scheduler's wait queue")
    startup_timeout: Switch = Field(
        default="on", description="a queued job's patience; off: nothing fails no_capacity"
    )
    rate: Switch = Field(default="on", description="per-key create rate limits")
    idle_timeout: Switch = Field(
        default="on", description="off: no session is ended by the idle timer (audio: null)"
    )
    max_duration: Switch = Field(
        default="on", description="off: no session is truncated by max duration or plan limits"
    )
    credits: Switch = Field(
        default="on",
        description="off: no session is refused insufficient_credits (a balance that runs out "
        "is charged as overage)",
    )

    def lifted(self) -> tuple[str, ...]:
        """The names of the limits switched off, in declaration order."""
        return tuple(name for name in type(self).model_fields if getattr(self, name) == "off")


def lift(config: SimConfig, limits: Limits, horizon: int) -> SimConfig:
    """``config`` with every limit switched ``off`` set beyond reach of a run of ``horizon`` s."""
    lifted = set(limits.lifted())
    if not lifted:
        return config
    bounds = config.limits
    scheduler = config.scheduler
    plans = config.billing.plans
    if "concurrency" in lifted:
        bounds = bounds.model_copy(
            update={
                "concurrent_sessions_per_key": UNREACHABLE_COUNT,
                "concurrent_sessions_per_org_default": UNREACHABLE_COUNT,
                "concurrent_sessions_per_org_ceiling": UNREACHABLE_COUNT,
            }
        )
        plans = tuple(
            p.model_copy(update={"concurrent_sessions": UNREACHABLE_COUNT}) for p in plans
        )
    if "queue" in lifted:
        scheduler = scheduler.model_copy(update={"max_queue_length": UNREACHABLE_COUNT})
    if "startup_timeout" in lifted:
        bounds = bounds.model_copy(update={"startup_timeout_seconds": float(horizon)})
    if "rate" in lifted:
        off = {name: None for name in type(bounds.rate).model_fields if name != "window_seconds"}
        bounds = bounds.model_copy(update={"rate": bounds.rate.model_copy(update=off)})
    if "idle_timeout" in lifted:
        ceiling = max(horizon, bounds.idle_timeout_max_seconds)
        bounds = bounds.model_copy(update={"idle_timeout_max_seconds": ceiling})
    if "max_duration" in lifted:
        ceiling = max(horizon, bounds.max_duration_ceiling_seconds)
        bounds = bounds.model_copy(update={"max_duration_ceiling_seconds": ceiling})
        plans = tuple(p.model_copy(update={"max_session_duration_seconds": ceiling}) for p in plans)
    billing_update: dict[str, object] = {"plans": plans}
    if "credits" in lifted:  # an empty balance (never below 0) still starts a session
        billing_update["min_session_start_credits"] = 0
    billing = config.billing.model_copy(update=billing_update)
    return config.model_copy(update={"limits": bounds, "scheduler": scheduler, "billing": billing})
