"""Realtime avatar sessions: records, validation, caps, scheduler, worker runtime and faults.

``SessionService`` is the entry point the platform wires (its read side in ``reads``); the
other modules each hold one concept (see their docstrings): the live record and its body
(``records``), the store of every session (``store``), transitions (``history``), audio
(``audio``), heartbeats, caps, the pool (``scheduler``), the worker timeline (``worker``), faults
(``faults``) and the status roll-up (``rollup``). ``Session`` is the immutable snapshot
collectors read.
"""

from __future__ import annotations

from sim.config import BILLING_SURFACES
from sim.sessions.audio import TalkSpurts
from sim.sessions.records import Session, Transition
from sim.sessions.scheduler import PoolMeter, PoolStatus, Worker
from sim.sessions.service import SessionService

__all__ = [
    "BILLING_SURFACES",
    "PoolMeter",
    "PoolStatus",
    "Session",
    "SessionService",
    "TalkSpurts",
    "Transition",
    "Worker",
]
