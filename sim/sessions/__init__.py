"""Realtime avatar sessions: records, validation, caps, scheduler, worker runtime and faults.

``SessionService`` is the entry point the platform wires; the other modules each hold one
concept (see their docstrings). ``Session`` is the immutable snapshot collectors read.
"""

from __future__ import annotations

from sim.sessions.records import Session, Transition
from sim.sessions.scheduler import PoolStatus, Worker
from sim.sessions.service import BILLING_SURFACES, SessionService

__all__ = ["BILLING_SURFACES", "PoolStatus", "Session", "SessionService", "Transition", "Worker"]
