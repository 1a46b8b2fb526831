"""The configuration values the domain reads while it serves requests, compiled once.

``SimConfig`` (pydantic) is what a user writes: it validates every value and names the field
that is wrong, and it nests them by section. What the services read while serving (each session
create reads a dozen values, from several sections) is copied, with a few values derived from
them (each plan's longest session), into one frozen record of plain attributes when the platform
is built (``Settings.of``, ``Kernel.settings``), which the services read instead of keeping
copies of their own. What is read rarely (setting up, rendering a plan, an error's message) is
read from ``SimConfig``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType

from sim.config import SimConfig

__all__ = ["Settings"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Each field is the ``SimConfig`` value of the same name, or says what it is derived from."""

    # limits
    idle_timeout_default_seconds: int
    idle_timeout_min_seconds: int
    idle_timeout_max_seconds: int
    max_duration_default_seconds: int
    max_duration_min_seconds: int
    max_duration_ceiling_seconds: int
    startup_timeout_seconds: float
    concurrent_sessions_per_key: int
    json_max_depth: int
    # sessions
    frames_per_second: int
    heartbeat_interval_seconds: float
    drain_base_seconds: float
    drain_max_seconds: float
    default_quality: str
    default_audio_source: str
    # billing
    min_session_start_credits: int
    #: No plan calls a balance at or above this low (each plan's low-balance threshold).
    highest_low_balance_threshold: int
    #: Each plan's longest session, by plan key (``max_session_duration_seconds``).
    longest_session_seconds: Mapping[str, int]
    #: The shortest of them: a session asking for no more is within every plan's longest.
    never_clamped_seconds: int

    @classmethod
    def of(cls, config: SimConfig) -> Settings:
        sections = (config.limits, config.sessions, config.billing)
        copied = {
            field.name: getattr(section, field.name)
            for field in fields(cls)
            for section in sections
            if field.name in type(section).model_fields
        }
        plans = config.billing.plans
        longest = {plan.key: plan.max_session_duration_seconds for plan in plans}
        return cls(
            **copied,
            highest_low_balance_threshold=max(p.low_balance_threshold_credits for p in plans),
            longest_session_seconds=MappingProxyType(longest),
            never_clamped_seconds=min(longest.values()),
        )
