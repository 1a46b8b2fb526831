"""What one run of ``SessionMachine`` drives (the API, the accounts, how time passes), what it
saw of each session, and what it reports when a live target breaks an invariant.

Why apart from the machine: the rules and invariants are one concept; binding them to a target
(in process on a platform, or by URL with or without the admin API) is another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.testing.admin import InProcessAdmin, SimAdmin
from harness.testing.machine_api import HttpApi, PlatformApi

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = [
    "Account",
    "MachineTarget",
    "Tracked",
    "broken_invariant",
    "in_process",
    "judged_by_the_model",
    "own_accounts",
]


@dataclass
class Tracked:
    """What the machine saw of one session it made: the key and account that made it, the body
    and ``Idempotency-Key`` sent, the statuses seen in order, and the resource when first seen
    terminal."""

    key: str
    account: int
    body: dict[str, Any]
    idempotency_key: str | None
    statuses: list[str] = field(default_factory=list)
    terminal: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Account:
    """An organization the machine uses: its keys and the cap it expects for it."""

    keys: tuple[str, ...]
    cap: int
    org_id: str | None = None


@dataclass
class MachineTarget:
    """What one run of the machine drives: the API, the simulator's controls if any, the
    accounts, how to let time pass, and whether answers can be judged exactly (in process:
    nothing else acts and time stands still between steps)."""

    api: PlatformApi | HttpApi
    accounts: tuple[Account, ...]
    pass_time: Callable[[float], None]
    admin: SimAdmin | None = None
    exact: bool = False
    platform: Platform | None = None
    #: The target's seconds to wait for sessions (and the ledger) to settle at the end against a
    #: URL, on the target's clock (``now``: simulated with the admin API, else the wall's).
    settle_seconds: float = 30.0
    now: Callable[[], float] = time.monotonic
    closers: list[Callable[[], None]] = field(default_factory=list)
    #: What the conformance model found wrong in the answers (by URL; empty in process, where
    #: the checks are exact).
    model_failures: list[str] = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self.closers):
            close()


def own_accounts(
    admin: SimAdmin, keys: Sequence[int] = (3, 2), caps: Sequence[int] = (2, 1)
) -> tuple[Account, ...]:
    """Fresh organizations made with the admin API: ``keys[i]`` unrestricted keys and a
    support override of ``caps[i]`` concurrent sessions each (on the free plan)."""
    accounts = []
    for number, (count, cap) in enumerate(zip(keys, caps, strict=True)):
        org = admin.create_organization(
            f"session machine {number}", "free", concurrency_override=cap
        )
        extra = [admin.create_key(org["id"])["key"] for _ in range(count - 1)]
        accounts.append(Account((org["keys"]["unrestricted"], *extra), cap, org["id"]))
    return tuple(accounts)


def judged_by_the_model(target: MachineTarget) -> MachineTarget:
    """Show every exchange of ``target``'s HTTP api to the conformance harness's model of the
    seed (``harness.conformance.model``), keeping what it finds wrong: by URL the machine holds
    the target to the same rules as ``avatar-sim conformance``."""
    from harness.conformance.model import SeedModel
    from harness.conformance.target import Credentials

    api = target.api
    if not isinstance(api, HttpApi):
        return target
    keys = {key: "own" if index == 0 else "other"
            for index, account in enumerate(target.accounts) for key in account.keys}  # fmt: skip
    first = target.accounts[0].keys[0]
    # With the admin API the machine plays audio into sessions: the idle timeout is then not
    # the model's to judge.
    model = SeedModel(
        Credentials(api=first), target.now, audio_may_flow=target.admin is not None,
        extra_keys=keys,  # type: ignore[arg-type]
    )  # fmt: skip

    def observe(exchange: Any) -> None:
        for verdict in model.observe(exchange):
            if verdict.failure is not None:
                target.model_failures.append(f"{verdict.rule}: {verdict.failure}")

    api.target.observers.append(observe)
    return target


def in_process(platform: Platform) -> MachineTarget:
    """An in-process target on ``platform``: two organizations of its own, exact checks."""
    admin = InProcessAdmin(platform)
    return MachineTarget(
        api=PlatformApi(platform),
        accounts=own_accounts(admin),
        pass_time=platform.clock.advance,
        admin=admin,
        exact=True,
        platform=platform,
        now=lambda: platform.clock.now,
    )


def broken_invariant(error: BaseException) -> AssertionError | None:
    """The ``AssertionError`` (an invariant that broke) behind hypothesis's ``Flaky`` report,
    looked for in the exceptions it groups and in what it was raised while handling."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AssertionError):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None
