"""``SessionMachine``: the session lifecycle fuzzed by hypothesis, on the simulator or any URL.

Why a reusable machine: the invariants that matter to a customer of the service (no session
beyond the concurrency caps, nothing leaving a terminal status, credits that add up) hold or not
whatever runs the service. The machine creates, ends and replays sessions, lets time pass and,
where the target has the simulator's admin API, plays audio, barges in, crashes workers, loses
heartbeats and resizes the pool; after every step it reads every session it made and checks:

* **caps**: no API key has more than ``per_key_cap`` (seed: 1) non-terminal sessions at once, no
  organization more than its cap; a create is refused ``concurrent_sessions`` only at a cap;
* **terminal is final**: a session seen ``ended``, ``failed`` or ``canceled`` stays so (in process,
  its whole resource stays the same);
* **answers**: a create answers ``queued`` with the effective timeouts, a replay with the same
  ``Idempotency-Key`` and body answers the same session, ``end`` on a terminal session answers it
  unchanged, and ``at_capacity`` and ``rate_limit`` refusals carry ``Retry-After``;
* **ledger**: what the balance lost equals what usage says was charged (``GET /v1/billing/quota``
  and ``GET /v1/usage``), at every step in process, once everything has settled against a URL.

Against a URL time is real, so a session seen active at some moment was active from its
creation until then (it cannot come back from a terminal status): every session a sweep sees
active was active when the sweep began, which is what makes the cap check sound without a shared
clock. The machine needs keys nobody else uses while it runs; with the admin API it makes its own
organizations for each example (fresh keys, known caps). Its targets are bound in
``harness.testing.machine_target``; its calls go through ``harness.testing.machine_api``.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from harness.testing.admin import AdminRefused
from harness.testing.http_admin import HttpAdmin
from harness.testing.machine_api import Answer, HttpApi
from harness.testing.machine_target import (
    Account,
    MachineTarget,
    Tracked,
    broken_invariant,
    in_process,
    judged_by_the_model,
    own_accounts,
)

if TYPE_CHECKING:
    from sim.config import SimConfig

__all__ = ["SessionMachine"]

#: The seed's session statuses a session never leaves.
TERMINAL = frozenset({"ended", "failed", "canceled"})
_NOT_STARTED = frozenset({"created", "queued", "starting"})
_TRANSPORT = {"type": "livekit", "url": "wss://rtc.example", "room_name": "machine"}


class SessionMachine(RuleBasedStateMachine):
    """A hypothesis ``RuleBasedStateMachine`` over sessions with the seed's invariants (caps,
    terminal statuses are final, the ledger balances), bound to a target by ``in_process`` or
    ``at_url``. Run it with ``run`` or expose its ``TestCase`` to pytest.

    Example::

        def test_my_deployment_keeps_its_caps():
            SessionMachine.at_url(
                "https://staging.example", api_keys=["sk_test_a", "sk_test_b"]
            ).run(max_examples=5, steps=15)

        TestSimulator = SessionMachine.in_process().TestCase   # collected by pytest

    Adding rules and invariants: subclass a bound machine and decorate methods with
    hypothesis's ``rule``, ``precondition`` and ``invariant``; they run beside the machine's own.
    ``self.target`` (a ``MachineTarget``) has the ``api``, the ``accounts``, ``pass_time`` and the
    ``admin`` (or ``None``); ``self.sessions`` maps each session made to its ``Tracked`` record.
    ``docs/testing-reference.md`` ("Extending SessionMachine") shows one.
    """

    #: The seed's cap of concurrent sessions per API key.
    per_key_cap: ClassVar[int] = 1
    #: The longest a single ``wait`` step lets pass, in the target's seconds.
    longest_wait: ClassVar[float] = 40.0

    def __init__(self) -> None:
        super().__init__()
        self.target = self.make_target()
        self.sessions: dict[str, Tracked] = {}
        #: Refused creates by ``type/code`` (for a subclass or a report).
        self.refusals: Counter[str] = Counter()
        #: Sessions whose heartbeats were made to drop (their usage may lag more than usual).
        self.heartbeats_lost: set[str] = set()
        self._keys = [
            (key, index)
            for index, account in enumerate(self.target.accounts)
            for key in account.keys
        ]
        self._ledger0 = [self._ledger(account) for account in self.target.accounts]
        self._serial = 0

    # -- binding -------------------------------------------------------------------------------

    def make_target(self) -> MachineTarget:
        """A fresh target for one example; ``in_process`` and ``at_url`` supply it."""
        raise TypeError(
            "bind SessionMachine to a target first: SessionMachine.in_process(...) or "
            "SessionMachine.at_url(...)"
        )

    @classmethod
    def against(cls, factory: Callable[[], MachineTarget]) -> type[SessionMachine]:
        """This machine bound to targets made by ``factory`` (one per example)."""

        def make_target(self: SessionMachine) -> MachineTarget:
            return factory()

        return type(cls.__name__, (cls,), {"make_target": make_target, "__doc__": cls.__doc__})

    @classmethod
    def in_process(cls, config: SimConfig | None = None) -> type[SessionMachine]:
        """Bound to a fresh in-process simulator per example (``config``: its configuration),
        with two organizations of its own (caps 2 and 1) and exact checks."""

        def factory() -> MachineTarget:
            from sim.platform import Platform

            return in_process(Platform.create(config))

        return cls.against(factory)

    @classmethod
    def at_url(
        cls,
        base_url: str,
        *,
        api_keys: Sequence[str] = (),
        admin_token: str | None = None,
        org_cap: int = 20,
        longest_sleep: float = 1.0,
        settle_seconds: float = 30.0,
        time_factor: float = 1.0,
    ) -> type[SessionMachine]:
        """Bound to the service at ``base_url``, in real time. With a served simulator's
        ``admin_token`` it makes its own organizations per example, moves the served clock to
        let time pass and uses the admin rules; otherwise it uses ``api_keys`` (of one
        organization whose cap is ``org_cap``, the seed's ceiling by default) and sleeps at most
        ``longest_sleep`` wall seconds per step; ``time_factor`` is the target's wall seconds per
        second of its own time (``avatar-sim serve --time-factor``), which the conformance model
        that judges every answer needs to read the target's timers."""
        if admin_token is None and not api_keys:
            raise ValueError("give api_keys, or the admin_token of a served simulator")

        def factory() -> MachineTarget:
            api = HttpApi(base_url)
            if admin_token is None:
                return judged_by_the_model(MachineTarget(
                    api=api,
                    accounts=(Account(tuple(api_keys), org_cap),),
                    pass_time=lambda seconds: time.sleep(min(seconds, longest_sleep)),
                    settle_seconds=settle_seconds,
                    closers=[api.close],
                    now=lambda: time.monotonic() / time_factor,
                ))  # fmt: skip
            admin = HttpAdmin(base_url, admin_token)

            def advance(seconds: float) -> None:
                admin.advance(seconds)

            return judged_by_the_model(MachineTarget(
                api=api,
                accounts=own_accounts(admin),
                pass_time=advance,
                admin=admin,
                settle_seconds=settle_seconds,
                closers=[api.close, admin.close],
                now=admin.now,
            ))  # fmt: skip

        return cls.against(factory)

    @classmethod
    def for_client(cls, client: httpx.Client, **at_url: Any) -> type[SessionMachine]:
        """Bound to whatever ``client`` talks to (the ``api_client`` fixture's target): the
        in-process simulator of the test (fresh organizations of its own per example, exact
        checks), a served simulator through its admin API, or a deployment with the client's own
        key (``at_url`` options, such as ``org_cap``, then apply).

        Example::

            def test_the_caps_hold(api_client):
                SessionMachine.for_client(api_client).run(max_examples=5, steps=10)
        """
        from harness.testing.target import InProcessTarget, target_of

        target = target_of(client)
        if isinstance(target, InProcessTarget):
            platform = target.platform
            return cls.against(lambda: in_process(platform))
        base_url = str(client.base_url).rstrip("/")
        admin = target.admin
        if isinstance(admin, HttpAdmin):
            return cls.at_url(base_url, admin_token=admin.token, **at_url)
        key = client.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return cls.at_url(base_url, api_keys=[key], **at_url)

    @classmethod
    def run(cls, *, max_examples: int = 25, steps: int = 30, **options: Any) -> None:
        """Run the machine as a test (``AssertionError`` with the failing program if an
        invariant breaks). ``options`` are further hypothesis settings."""
        chosen = settings(
            max_examples=max_examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            **options,
        )
        try:
            run_state_machine_as_test(cls, settings=chosen)
        except Flaky as error:
            # A live target is state hypothesis cannot reset: replaying a failing program can
            # take another path. The invariant that broke is still the finding.
            broken = broken_invariant(error)
            if broken is None:
                raise
            raise AssertionError(
                f"{broken} (found against a live target; replaying the program did not take "
                "the same path, as a target in real time may not)"
            ) from error

    # -- rules ---------------------------------------------------------------------------------

    @rule(
        who=st.integers(0, 1000),
        idle=st.integers(1, 40),
        max_duration=st.integers(1, 120),
        quality=st.sampled_from(["mock", "lite", "standard", "pro"]),
        source=st.sampled_from(["track", "data_stream"]),
        keyed=st.booleans(),
    )
    def create(
        self, who: int, idle: int, max_duration: int, quality: str, source: str, keyed: bool
    ) -> None:
        key, account = self._keys[who % len(self._keys)]
        body = {
            "avatar_id": "av_stock_mock",
            "transport": {**_TRANSPORT, "audio_source": source},
            "idle_timeout_seconds": idle,
            "max_duration_seconds": max_duration,
            "quality": quality,
        }
        self._serial += 1
        idempotency_key = f"machine-{id(self)}-{self._serial}" if keyed else None
        known_active_key = self._maybe_active(lambda t: t.key == key)
        known_active_org = self._maybe_active(lambda t: t.account == account)
        answer = self.target.api.create(key, body, idempotency_key)
        if not answer.ok:
            self._judge_refusal(answer, known_active_key, known_active_org, account)
            return
        made = answer.body
        assert made["status"] == "queued", f"a create answered {made['status']}, not queued"
        assert made["idle_timeout_seconds"] == idle, made
        assert 1 <= made["max_duration_seconds"] <= max_duration, made
        assert made["id"] not in self.sessions, f"a create answered an existing id {made['id']}"
        self.sessions[made["id"]] = Tracked(key, account, body, idempotency_key, ["queued"])

    @precondition(lambda self: any(t.idempotency_key for t in self.sessions.values()))
    @rule(pick=st.integers(0, 1000))
    def replay(self, pick: int) -> None:
        keyed = [(i, t) for i, t in self.sessions.items() if t.idempotency_key]
        session_id, tracked = keyed[pick % len(keyed)]
        answer = self.target.api.create(tracked.key, tracked.body, tracked.idempotency_key)
        if answer.code == "rate_limited" or answer.error_type == "rate_limit":
            return  # a deployment may count replays; the simulator does not (GAP-LIM-2)
        assert answer.ok, f"replaying the create of {session_id} answered {answer.describe()}"
        assert answer.body["id"] == session_id, (
            f"replaying the create of {session_id} made another session {answer.body['id']}"
        )

    @precondition(lambda self: bool(self.sessions))
    @rule(pick=st.integers(0, 1000), times=st.integers(1, 2))
    def end(self, pick: int, times: int) -> None:
        session_id = list(self.sessions)[pick % len(self.sessions)]
        tracked = self.sessions[session_id]
        before = tracked.statuses[-1]
        for _ in range(times):  # end, and end again
            answer = self.target.api.end(tracked.key, session_id)
            assert answer.ok, f"end of {session_id} answered {answer.describe()}"
            status = answer.body["status"]
            self._saw(session_id, tracked, status, answer.body)
        if before in TERMINAL:
            assert status == before, f"end of a {before} session answered {status}"
        elif self.target.exact and before in _NOT_STARTED:
            assert status == "canceled", f"end of a {before} session answered {status}"
        elif self.target.exact and before == "running":
            assert status == "ending", f"end of a running session answered {status}"

    @rule(seconds=st.floats(0, 40, allow_nan=False))
    def wait(self, seconds: float) -> None:
        self.target.pass_time(min(seconds, self.longest_wait))

    @precondition(lambda self: self.target.admin is not None and bool(self.sessions))
    @rule(
        pick=st.integers(0, 1000),
        kind=st.sampled_from(["speech", "silence"]),
        seconds=st.floats(0.5, 60, allow_nan=False),
    )
    def audio(self, pick: int, kind: str, seconds: float) -> None:
        assert self.target.admin is not None
        audio: Literal["speech", "silence"] = "speech" if kind == "speech" else "silence"
        self.target.admin.play_audio(self._pick(pick), audio, seconds)

    @precondition(lambda self: self.target.admin is not None and bool(self.sessions))
    @rule(pick=st.integers(0, 1000))
    def barge_in(self, pick: int) -> None:
        assert self.target.admin is not None
        self.target.admin.barge_in(self._pick(pick))

    @precondition(lambda self: self.target.admin is not None and bool(self.sessions))
    @rule(pick=st.integers(0, 1000))
    def crash(self, pick: int) -> None:
        assert self.target.admin is not None
        with contextlib.suppress(AdminRefused):  # not on a worker (any more)
            self.target.admin.crash_worker(self._pick(pick))

    @precondition(lambda self: self.target.admin is not None and bool(self.sessions))
    @rule(pick=st.integers(0, 1000), seconds=st.floats(1, 60, allow_nan=False))
    def lose_heartbeats(self, pick: int, seconds: float) -> None:
        assert self.target.admin is not None
        session_id = self._pick(pick)
        try:
            self.target.admin.lose_heartbeats(session_id, seconds)
        except AdminRefused:
            return  # not running (any more)
        self.heartbeats_lost.add(session_id)

    @precondition(lambda self: self.target.admin is not None)
    @rule(workers=st.integers(0, 4))
    def capacity(self, workers: int) -> None:
        assert self.target.admin is not None
        self.target.admin.set_capacity(workers)

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def observe(self) -> None:
        """Read every session once, then check the caps on what this sweep saw active, and that
        nothing left a terminal status; in process, also the ledger."""
        active: list[tuple[str, Tracked]] = []
        for session_id, tracked in self.sessions.items():
            answer = self.target.api.retrieve(tracked.key, session_id)
            assert answer.ok, f"GET {session_id} answered {answer.describe()}"
            status = answer.body["status"]
            self._saw(session_id, tracked, status, answer.body)
            if status not in TERMINAL:
                active.append((session_id, tracked))
        self._check_caps(active)
        if self.target.exact:
            self.check_ledger()
        assert not self.target.model_failures, (
            "the conformance model of the seed found: " + self.target.model_failures[0]
        )

    def teardown(self) -> None:
        try:
            self._settle()
        finally:
            if self.target.admin is not None:
                self.target.admin.restore()
            self.target.api.close()
            self.target.close()

    # -- checks --------------------------------------------------------------------------------

    def check_ledger(self) -> None:
        """For each account: the balance lost since the start equals the credits charged."""
        for index, account in enumerate(self.target.accounts):
            balance0, charged0 = self._ledger0[index]
            balance, charged = self._ledger(account)
            assert balance0 - balance == charged - charged0, (
                f"ledger out of balance for {account.org_id or account.keys[0][:12]}: the "
                f"balance fell by {balance0 - balance} credits, usage charged "
                f"{charged - charged0}"
            )

    def _check_caps(self, active: list[tuple[str, Tracked]]) -> None:
        per_key: dict[str, list[str]] = {}
        per_org: dict[int, list[str]] = {}
        for session_id, tracked in active:
            per_key.setdefault(tracked.key, []).append(session_id)
            per_org.setdefault(tracked.account, []).append(session_id)
        for key, ids in per_key.items():
            assert len(ids) <= self.per_key_cap, (
                f"per-key cap exceeded: key {key[:12]}... has {len(ids)} active sessions at "
                f"once ({', '.join(self._describe(i) for i in ids)}); the cap is "
                f"{self.per_key_cap}"
            )
        for index, ids in per_org.items():
            cap = self.target.accounts[index].cap
            assert len(ids) <= cap, (
                f"organization cap exceeded: {len(ids)} active sessions at once "
                f"({', '.join(self._describe(i) for i in ids)}); the cap is {cap}"
            )

    def _judge_refusal(
        self, answer: Answer, active_key: int, active_org: int, account: int
    ) -> None:
        self.refusals[answer.describe()] += 1
        if answer.code == "concurrent_sessions":
            assert answer.error_type == "quota_exceeded", answer
            cap = self.target.accounts[account].cap
            assert active_key >= self.per_key_cap or active_org >= cap, (
                f"a create was refused concurrent_sessions with {active_key} session(s) of its "
                f"key and {active_org} of its organization possibly active (caps "
                f"{self.per_key_cap} and {cap})"
            )
            return
        if answer.code == "insufficient_credits":
            return  # the organization's credits ran out: a refusal the contract allows
        if answer.code == "at_capacity" or answer.error_type == "rate_limit":
            assert answer.retry_after is not None and answer.retry_after >= 1, (
                f"{answer.describe()} without a Retry-After of at least 1 s"
            )
            return
        raise AssertionError(f"a valid create was refused {answer.describe()}")

    def _saw(self, session_id: str, tracked: Tracked, status: str, body: dict[str, Any]) -> None:
        if tracked.terminal is not None:
            final = tracked.terminal["status"]
            assert status == final, f"{session_id} left {final} for {status}"
            if self.target.exact:
                assert body == tracked.terminal, f"{session_id} changed after it was {final}"
        elif status in TERMINAL:
            tracked.terminal = body
        if tracked.statuses[-1] != status:
            tracked.statuses.append(status)

    def _maybe_active(self, belongs: Callable[[Tracked], bool]) -> int:
        """Sessions that may still be active (not yet seen terminal) among those chosen."""
        return sum(1 for t in self.sessions.values() if belongs(t) and t.terminal is None)

    def _pick(self, pick: int) -> str:
        return list(self.sessions)[pick % len(self.sessions)]

    def _describe(self, session_id: str) -> str:
        return f"{session_id} ({' -> '.join(self.sessions[session_id].statuses)})"

    def _ledger(self, account: Account) -> tuple[int, int]:
        quota = self.target.api.quota(account.keys[0])
        usage = self.target.api.usage(account.keys[0])
        assert quota.ok and usage.ok, (quota.describe(), usage.describe())
        return int(quota.body["balance_credits"]), int(usage.body["credits_charged"])

    def _settle(self) -> None:
        """End what is left and let it finish; against a URL, then check the ledger once it
        stops moving (its charges may land a little after the sessions end)."""
        for session_id, tracked in self.sessions.items():
            if tracked.terminal is None:
                self.target.api.end(tracked.key, session_id)
        if self.target.exact:
            self.target.pass_time(60.0)
            return
        now = self.target.now
        deadline = now() + self.target.settle_seconds
        while True:
            pending = [
                i
                for i, t in self.sessions.items()
                if self.target.api.retrieve(t.key, i).body["status"] not in TERMINAL
            ]
            if not pending:
                break
            assert now() < deadline, f"sessions did not finish: {pending}"
            self.target.pass_time(5.0)
            time.sleep(0.05)
        last_error: AssertionError | None = None
        while now() < deadline:
            try:
                self.check_ledger()
                return
            except AssertionError as error:
                last_error = error
                self.target.pass_time(1.0)  # time must pass for the charges to land
                time.sleep(0.05)
        if last_error is not None:
            raise last_error
