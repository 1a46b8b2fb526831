"""What the run knows of one session (``SessionFacts``), and how a rule reports a session once.

Why apart: the session book and the stamp rules both read a session's facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.keys import Org
from harness.conformance.model.rules import Verdict
from harness.conformance.watch import TERMINAL
from harness.target import Exchange

__all__ = ["TERMINAL", "SessionFacts", "fail_once"]


@dataclass
class SessionFacts:
    """One session as the run has seen it (times on the run's clock)."""

    id: str
    org: Org | None
    role: str | None
    #: When the create that made it was sent, and when its answer arrived (``None``: the
    #: session was first seen in a list or a read, not made by this run).
    sent: float | None = None
    created: float | None = None
    idle: int | None = None
    max_duration: int | None = None
    #: (time, status, order) of every observation; ``order`` counts the model's observations,
    #: so "seen before a request" holds on a clock that did not move between the two.
    statuses: list[tuple[float, str, int]] = field(default_factory=list)
    placed_at: float | None = None
    running_at: float | None = None
    ending_at: float | None = None
    ends_sent: list[float] = field(default_factory=list)
    failed_rules: set[str] = field(default_factory=set)
    #: started_at and first_frame_at as first shown.
    stamps: dict[str, str] = field(default_factory=dict)
    #: What the session was created with, as its create answered (it never changes).
    fixed: dict[str, Any] = field(default_factory=dict)

    @property
    def last(self) -> str | None:
        return self.statuses[-1][1] if self.statuses else None

    @property
    def terminal(self) -> str | None:
        return next((s for _, s, _ in self.statuses if s in TERMINAL), None)

    @property
    def ran(self) -> bool:
        return self.running_at is not None

    def progress(self) -> str:
        """How far the session had got, for ``END_RULES``."""
        if self.running_at is not None or self.ending_at is not None:
            return "ran"
        if self.placed_at is not None:
            return "placed"
        return "not_started"


def fail_once(facts: SessionFacts, rule: str, exchange: Exchange, message: str) -> Verdict:
    """A failure, reported once per session and rule (a session stuck is one failure)."""
    if rule in facts.failed_rules:
        return Verdict.passed(rule, exchange, edge=False)
    facts.failed_rules.add(rule)
    return Verdict.failed(rule, exchange, message)
