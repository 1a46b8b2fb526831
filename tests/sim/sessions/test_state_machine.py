"""The session service under ``harness.testing.SessionMachine`` (SES-ST-*, LIM-1, LIM-2, SIM-4).

The project runs the same machine it ships to users: random interleavings of create, replay,
end (again and again), time, audio, barge-in, worker crashes, heartbeat loss and capacity
changes, with the machine's own checks after every step (the caps, terminal statuses final and
their resources unchanged, the answers, the ledger balanced). In process it can see more than a
client can, so this subclass adds the simulator's inner invariants: every recorded transition is
a row of the declared table; timestamps are ordered; usage lags by at most one heartbeat; no
session is lost (each live one is queued or on the worker that hosts it); each session is charged
at most once, and exactly when it ended with billable seconds; the pool matches its capacity.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from harness.testing import SessionMachine
from sim.config import SchedulerConfig, SessionConfig, SimConfig
from sim.lifecycle import ACTIVE, TERMINAL, TRANSITIONS
from sim.platform import Platform

CONFIG = SimConfig(
    scheduler=SchedulerConfig(workers=2, max_queue_length=2, worker_restart_seconds=20),
    sessions=SessionConfig(heartbeat_interval_seconds=10, heartbeat_loss_limit_seconds=25),
)


class PlatformSessionMachine(SessionMachine.in_process(CONFIG)):  # type: ignore[misc]
    """The shipped machine plus what only the simulator's insides show."""

    @property
    def platform(self) -> Platform:
        platform = self.target.platform
        assert platform is not None
        return platform

    # -- a rule a client cannot take: crash any worker, idle ones included ---------------------

    @rule(pick=st.integers(0, 1000))
    def crash_any_worker(self, pick: int) -> None:
        workers = self.platform.sessions.workers()
        if workers:
            self.platform.sessions.faults.crash_worker(worker_id=workers[pick % len(workers)].id)

    # -- invariants of the insides -------------------------------------------------------------

    @invariant()
    def transitions_follow_the_table(self) -> None:
        for session in self.platform.sessions.sessions():
            previous = None
            for step in session.history:
                assert step.from_status == previous
                assert TRANSITIONS[(step.from_status, step.trigger)] == step.to_status
                assert previous not in TERMINAL
                previous = step.to_status
            assert previous == session.status

    @invariant()
    def caps_hold_inside(self) -> None:
        live = [s for s in self.platform.sessions.sessions() if s.status in ACTIVE]
        per_key = Counter(s.key_id for s in live)
        per_org = Counter(s.org_id for s in live)
        assert all(n <= 1 for n in per_key.values())
        for org, n in per_org.items():
            assert n <= self.platform.accounts.concurrency_limit(org)

    @invariant()
    def times_are_ordered(self) -> None:
        now = self.platform.clock.now
        for s in self.platform.sessions.sessions():
            marks = [s.created_at, s.started_at, s.first_frame_at, s.ending_at, s.ended_at]
            present = [m for m in marks if m is not None]
            assert present == sorted(present)
            assert all(m <= now + 1e-9 for m in present)

    @invariant()
    def usage_lags_at_most_one_heartbeat(self) -> None:
        interval = CONFIG.sessions.heartbeat_interval_seconds
        now = self.platform.clock.now
        for s in self.platform.sessions.sessions():
            if s.first_frame_at is None:
                assert s.billable_seconds == 0
                continue
            until = s.ended_at if s.ended_at is not None else now
            exact = until - s.first_frame_at
            assert s.billable_seconds <= math.ceil(exact - 1e-9)
            if s.ended_at is not None:
                assert s.billable_seconds == max(0, math.ceil(exact - 1e-9))
            elif s.id not in self.heartbeats_lost:
                assert exact - s.billable_seconds < interval + 1e-6

    @invariant()
    def no_session_is_lost(self) -> None:
        service = self.platform.sessions
        queued = set(service.queued())
        hosted = {w.session_id: w for w in service.workers() if w.status == "busy"}
        assert len(service.sessions()) == len(self.sessions)
        for s in service.sessions():
            if s.status == "queued":
                assert s.id in queued
            elif s.status in ("starting", "running", "ending"):
                assert s.id in hosted and hosted[s.id].id == s.worker_id
            else:
                assert s.id not in queued and s.id not in hosted

    @invariant()
    def charged_at_most_once(self) -> None:
        primary = Counter(
            row.session_id
            for row in self.platform.billing.entries()
            if row.session_id is not None and row.billable_seconds > 0
        )
        assert all(n == 1 for n in primary.values())
        for s in self.platform.sessions.sessions():
            should = s.status in TERMINAL and s.billable_seconds > 0
            assert (primary[s.id] == 1) == should
            assert s.charged == (s.status in TERMINAL and s.first_frame_at is not None)

    @invariant()
    def pool_matches_capacity(self) -> None:
        pool = self.platform.sessions.pool_status()
        active = [w for w in self.platform.sessions.workers() if not w.retiring]
        assert len(active) == pool.capacity


@pytest.mark.req(
    "SES-ST-1",
    "SES-ST-3",
    "SES-ST-4",
    "SES-ST-5",
    "SES-ST-8",
    "SES-ST-9",
    "LIM-1",
    "LIM-2",
    "RES-SESS-4",
    "RES-SESS-5",
    "SIM-3",
    "SIM-4",
    "SIM-9",
    "HAR-8",
)
def test_session_state_machine() -> None:
    PlatformSessionMachine.run(max_examples=60, steps=40)
