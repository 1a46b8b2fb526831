"""A hypothesis state machine over the whole session service (SES-ST-*, LIM-1, LIM-2, SIM-4).

Random interleavings of create, end (again and again), time, audio, barge-in, worker crashes,
heartbeat loss and capacity changes. After every step the invariants must hold: every observed
transition is a row of the declared table and nothing leaves a terminal status; the caps are
never exceeded; timestamps are ordered; usage lags by at most one heartbeat; no session is lost
(each live one is queued or on a worker that hosts it); each session is charged at most once,
and exactly when it reached ``running`` and then ended.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sim.accounts import Caller
from sim.config import SchedulerConfig, SessionConfig, SimConfig
from sim.errors import QuotaExceeded, ServiceUnavailable
from sim.lifecycle import ACTIVE, TERMINAL, TRANSITIONS

if TYPE_CHECKING:
    from conftest import Kit, World

CONFIG = SimConfig(
    scheduler=SchedulerConfig(workers=2, max_queue_length=2, worker_restart_seconds=20),
    sessions=SessionConfig(heartbeat_interval_seconds=10, heartbeat_loss_limit_seconds=25),
)


class SessionMachine(RuleBasedStateMachine):
    def __init__(self, kit: Kit) -> None:
        super().__init__()
        self.kit = kit
        self.world: World = kit.world(CONFIG)
        accounts = self.world.accounts
        self.orgs = [
            accounts.create_organization("A", "free").id,
            accounts.create_organization("B", "free").id,
        ]
        accounts.set_concurrency_override(self.orgs[1], 2)
        self.callers: list[Caller] = [self.world.caller(org) for org in self.orgs for _ in range(3)]
        self.ids: list[str] = []
        self.owner: dict[str, Caller] = {}
        self.terminal_seen: dict[str, dict[str, Any]] = {}
        self.losing: set[str] = set()

    # -- rules -------------------------------------------------------------------------------

    @rule(
        who=st.integers(0, 5),
        source=st.sampled_from(["track", "data_stream"]),
        idle=st.integers(1, 40),
        max_duration=st.integers(1, 120),
        quality=st.sampled_from(["mock", "lite", "standard", "pro"]),
    )
    def create(self, who: int, source: str, idle: int, max_duration: int, quality: str) -> None:
        caller = self.callers[who]
        transport = dict(self.kit.body()["transport"], audio_source=source)
        active_key = sum(
            1
            for s in self.world.service.sessions()
            if s.key_id == caller.key_id and s.status in ACTIVE
        )
        try:
            made = self.world.service.create(
                caller,
                self.kit.body(
                    transport=transport,
                    idle_timeout_seconds=idle,
                    max_duration_seconds=max_duration,
                    quality=quality,
                ),
            )
        except QuotaExceeded as error:
            assert error.code == "concurrent_sessions"
            limit = self.world.accounts.concurrency_limit(caller.org_id)
            active_org = sum(
                1
                for s in self.world.service.sessions()
                if s.org_id == caller.org_id and s.status in ACTIVE
            )
            assert active_key >= 1 or active_org >= limit  # refused only at a cap
            return
        except ServiceUnavailable as error:
            assert error.code == "at_capacity" and error.retry_after is not None
            assert error.retry_after >= 1
            return
        assert made["status"] == "queued"
        self.ids.append(made["id"])
        self.owner[made["id"]] = caller

    @precondition(lambda self: bool(self.ids))
    @rule(pick=st.integers(0, 1000), times=st.integers(1, 2))
    def end(self, pick: int, times: int) -> None:
        session_id = self.ids[pick % len(self.ids)]
        before = self.world.service.session(session_id).status
        for _ in range(times):  # end, and end again
            answer = self.world.service.end(self.owner[session_id], session_id)
        if before in TERMINAL:
            assert answer["status"] == before
        elif before == "running":
            assert answer["status"] in ("ending",)
        elif before in ("queued", "starting"):
            assert answer["status"] == "canceled"

    @rule(seconds=st.floats(0, 40, allow_nan=False))
    def advance(self, seconds: float) -> None:
        self.world.advance(seconds)

    @precondition(lambda self: bool(self.ids))
    @rule(
        pick=st.integers(0, 1000),
        kind=st.sampled_from(["speech", "silence"]),
        duration=st.floats(0, 60, allow_nan=False),
    )
    def audio(self, pick: int, kind: str, duration: float) -> None:
        self.world.service.inject_audio(
            self.ids[pick % len(self.ids)],
            kind="speech" if kind == "speech" else "silence",
            duration=duration,
        )

    @precondition(lambda self: bool(self.ids))
    @rule(pick=st.integers(0, 1000))
    def barge_in(self, pick: int) -> None:
        self.world.service.clear_buffer(self.ids[pick % len(self.ids)])

    @rule(pick=st.integers(0, 1000))
    def crash(self, pick: int) -> None:
        workers = self.world.service.workers()
        if workers:
            self.world.service.faults.crash_worker(worker_id=workers[pick % len(workers)].id)

    @rule(workers=st.integers(0, 4))
    def capacity(self, workers: int) -> None:
        self.world.service.faults.set_capacity(workers)

    @precondition(lambda self: bool(self.ids))
    @rule(pick=st.integers(0, 1000), duration=st.floats(1, 60, allow_nan=False))
    def lose_heartbeats(self, pick: int, duration: float) -> None:
        session_id = self.ids[pick % len(self.ids)]
        if self.world.service.session(session_id).status == "running":
            self.world.service.faults.lose_heartbeats(session_id, duration)
            self.losing.add(session_id)

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def transitions_follow_the_table(self) -> None:
        for session in self.world.service.sessions():
            previous = None
            for step in session.history:
                assert step.from_status == previous
                assert TRANSITIONS[(step.from_status, step.trigger)] == step.to_status
                assert previous not in TERMINAL
                previous = step.to_status
            assert previous == session.status

    @invariant()
    def terminal_is_final(self) -> None:
        for session in self.world.service.sessions():
            rendered = self.world.service.retrieve(self.owner[session.id], session.id)
            if session.id in self.terminal_seen:
                assert rendered == self.terminal_seen[session.id]
            elif session.status in TERMINAL:
                self.terminal_seen[session.id] = rendered

    @invariant()
    def caps_hold(self) -> None:
        live = [s for s in self.world.service.sessions() if s.status in ACTIVE]
        per_key = Counter(s.key_id for s in live)
        per_org = Counter(s.org_id for s in live)
        assert all(n <= 1 for n in per_key.values())
        for org, n in per_org.items():
            assert n <= self.world.accounts.concurrency_limit(org)

    @invariant()
    def times_are_ordered(self) -> None:
        for s in self.world.service.sessions():
            marks = [s.created_at, s.started_at, s.first_frame_at, s.ending_at, s.ended_at]
            present = [m for m in marks if m is not None]
            assert present == sorted(present)
            assert all(m <= self.world.now + 1e-9 for m in present)

    @invariant()
    def usage_lags_at_most_one_heartbeat(self) -> None:
        interval = CONFIG.sessions.heartbeat_interval_seconds
        now = self.world.now
        for s in self.world.service.sessions():
            if s.first_frame_at is None:
                assert s.billable_seconds == 0
                continue
            until = s.ended_at if s.ended_at is not None else now
            exact = until - s.first_frame_at
            assert s.billable_seconds <= math.ceil(exact - 1e-9)
            if s.ended_at is not None:
                assert s.billable_seconds == max(0, math.ceil(exact - 1e-9))
            elif s.id not in self.losing:
                assert exact - s.billable_seconds < interval + 1e-6

    @invariant()
    def no_session_is_lost(self) -> None:
        queued = set(self.world.service.queued())
        hosted = {w.session_id: w for w in self.world.service.workers() if w.status == "busy"}
        assert len(self.world.service.sessions()) == len(self.ids)
        for s in self.world.service.sessions():
            if s.status == "queued":
                assert s.id in queued
            elif s.status in ("starting", "running", "ending"):
                assert s.id in hosted and hosted[s.id].id == s.worker_id
            else:
                assert s.id not in queued and s.id not in hosted

    @invariant()
    def charged_at_most_once(self) -> None:
        charges = Counter(c.session_id for c in self.world.billing.charges)
        assert all(n == 1 for n in charges.values())
        for s in self.world.service.sessions():
            should = s.status in TERMINAL and s.first_frame_at is not None
            assert (charges[s.id] == 1) == should == s.charged

    @invariant()
    def pool_matches_capacity(self) -> None:
        pool = self.world.service.pool_status()
        active = [w for w in self.world.service.workers() if not w.retiring]
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
)
def test_session_state_machine(kit: Kit) -> None:
    run_state_machine_as_test(
        lambda: SessionMachine(kit),
        settings=settings(
            max_examples=60,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
