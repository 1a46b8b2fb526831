"""The harness where it is used: a deployment it did not write, over real HTTP, in real time,
without the simulator's admin API, reading the seed's open points its own way (HAR-2, HAR-5,
HAR-6).

Each deployment here is the simulator served on a real port by ``tests.conformance.served``, on a
fast clock (``FACTOR``: fifty simulated seconds per wall second), behind edits that make it
another implementation: one that reads every open point otherwise (``legal_readings``), one with
a deliberate fault (``mutations``), one that misbehaves (``misbehaving``). The harness is given
the keys and the time factor, never the admin token, and waits in real time as it would against
a staging deployment.

``make test`` runs one such run (the other legal readings, a few seconds); the others, each a
whole real-time run or one per mutant, are ``slow``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from harness.conformance.checks import CHECKS
from harness.conformance.clock import RealClock
from harness.conformance.inputs import Inputs
from harness.conformance.report import Report
from harness.conformance.runner import RunOptions, run
from harness.target import Credentials, Target
from tests.conformance.edits import Edits
from tests.conformance.gap_variant import GAP_VARIANT
from tests.conformance.legal_readings import (
    LEGAL_READINGS,
    LEGAL_READINGS_PLACED,
    LEGAL_READINGS_SLIDING,
    placed_only_cap,
)
from tests.conformance.misbehaving import ALWAYS_RATE_LIMITED, NEVER_ENDING, stalling
from tests.conformance.mutations import MUTATIONS, Mutation
from tests.conformance.served import Served, Wrap, served
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-2", "HAR-5")

#: The served clock's wall seconds per simulated second.
FACTOR = 0.02
#: What a deployment without the admin API cannot be made to show.
ADMIN_ONLY = ["startup_timeout_fails", "at_capacity_refused"]
#: The one check a fast clock still cannot reach within --max-wait: the 24-hour window.
LONG = ["idempotency_window"]


@contextmanager
def _deployment(
    edits: Edits | None = None, *, wrap: Wrap | None = None, factor: float = FACTOR
) -> Iterator[Served]:
    with served(edits, time_factor=factor, wrap=wrap) as deployment:
        yield deployment


def _run(
    deployment: Served,
    *,
    only: frozenset[str] | None = None,
    max_examples: int = 2,
    timeout: float = 20.0,
    credentials: Credentials | None = None,
    max_wait: float = 180.0,
) -> Report:
    """The harness as a stranger runs it: keys only, real waits scaled by the time factor."""
    factor = deployment.time_factor
    assert factor is not None
    target = Target.url(
        deployment.base_url, credentials or deployment.credentials(), timeout=timeout
    )
    try:
        options = RunOptions(
            max_examples=max_examples,
            seed=5,
            only=only,
            clock=RealClock(factor=factor),
            inputs=Inputs(max_wait_seconds=max_wait),
        )
        return run(target, options)
    finally:
        target.close()


def _conforming(report: Report, elsewhere: frozenset[str] = frozenset()) -> None:
    """Nothing failed and nothing was left incomplete; only what no deployment can show
    without the admin API, what a seen condition never arose for, or what the deployment
    serves where the seed shows no path (``elsewhere``) is not applicable; the 24-hour window
    is beyond the run's time, which the verdict says while the exit stays 0."""
    assert report.failed_names() == [], report.summary()
    assert report.names("incomplete") == [], report.summary()
    assert report.names("beyond_time") == LONG, report.summary()
    allowed = {*ADMIN_ONLY, "unplaced_failure_code", *elsewhere}
    assert set(report.names("not_applicable")) <= allowed, report.summary()
    assert report.exit_code == 0 and "beyond this run's time" in report.verdict()


@pytest.mark.req("HAR-6", "LIM-7", "EP-SESS-8", "EP-AV-1", "EP-AV-3", "ERR-2", "ERR-3", "LIM-4")
def test_other_legal_readings_pass_over_real_http_in_real_time() -> None:
    """The short real-time run of ``make test``: 17 other readings of the seed's open points,
    served, judged in real time without the admin token, and every check that can run passes."""
    with _deployment(LEGAL_READINGS) as deployment:
        report = _run(deployment)
    _conforming(report)
    assert report.cases > 0 and report.result("create_rate_limit").outcome == "passed"
    assert report.result("rate_limit_bursts").outcome == "passed"


@pytest.mark.parametrize(
    ("edits", "wrap"),
    [(LEGAL_READINGS, None), (LEGAL_READINGS_SLIDING, None),
     (LEGAL_READINGS_PLACED, placed_only_cap)],
    ids=["other readings", "sliding-window counter", "caps on placed sessions"],
)  # fmt: skip
def test_other_legal_readings_pass_every_check_with_the_admin_clock(
    edits: Edits, wrap: Wrap | None
) -> None:
    """In process with the admin clock, where every check can run (the window too)."""
    sim = simulated(edits=edits, wrap=wrap)
    report = run(sim.target, RunOptions(max_examples=2, seed=5))
    assert report.failed_names() == [], report.summary()
    assert report.names("incomplete") == [] and report.names("not_applicable") == []
    assert report.exit_code == 0


# -- the whole run, over HTTP, against each deployment (slow) -------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edits", "wrap"),
    [(None, None), (GAP_VARIANT, None), (LEGAL_READINGS_SLIDING, None),
     (LEGAL_READINGS_PLACED, placed_only_cap)],
    ids=["the simulator", "the gap variant", "sliding-window counter", "caps on placed sessions"],
)  # fmt: skip
def test_every_legal_deployment_passes_over_real_http_in_real_time(
    edits: Edits | None, wrap: Wrap | None
) -> None:
    with _deployment(edits, wrap=wrap) as deployment:
        report = _run(deployment, max_examples=5)
    # The gap variant cancels a run at /cancellation: the probe of /cancel finds nothing there.
    _conforming(report, frozenset({"run_cancel_probe"}) if edits is GAP_VARIANT else frozenset())


# -- mutants, over HTTP, without the admin token (slow) -------------------------------------------

#: Mutants caught only where the simulator's admin API can bring their condition about.
NEEDS_ADMIN = [m.name for m in MUTATIONS if CHECKS[m.caught_by].needs == ("admin",)]
SERVED_MUTANTS = [m for m in MUTATIONS if m.name not in NEEDS_ADMIN]
#: The idempotency window's mutant needs a day to pass within --max-wait: a faster clock.
_FACTORS = {"keys_never_expire": 0.0005}


@pytest.mark.req("HAR-6")
def test_every_mutant_but_those_needing_the_admin_api_is_named_over_http() -> None:
    """Only the capacity faults need the admin API to arise; the start-up timeout's fault is
    named over HTTP too, by ``unplaced_failure_without_code`` (a pool of no workers)."""
    assert NEEDS_ADMIN == ["no_capacity_renamed", "at_capacity_renamed"]
    assert "unplaced_failure_without_code" in {m.name for m in SERVED_MUTANTS}
    assert len(SERVED_MUTANTS) >= 40


def _credentials(deployment: Served, mutation: Mutation) -> Credentials:
    given = deployment.credentials()
    if mutation.api_key is None:
        return given
    keys = {**deployment.keys, "other_unrestricted": deployment.other_org_key}
    return Credentials(
        api=mutation.api_key(keys),
        other_org=given.other_org,
        runs_read=given.runs_read,
        runs_write=given.runs_write,
        revoked=given.revoked,
    )


@pytest.mark.slow
@pytest.mark.req("HAR-6")
@pytest.mark.parametrize("mutation", SERVED_MUTANTS, ids=[m.name for m in SERVED_MUTANTS])
def test_each_mutant_is_named_over_http_without_the_admin_token(mutation: Mutation) -> None:
    factor = _FACTORS.get(mutation.name, FACTOR)
    with _deployment(mutation.edits, factor=factor) as deployment:
        report = _run(
            deployment,
            only=frozenset({mutation.caught_by, *mutation.drive}),
            max_examples=2 if mutation.fuzz else 0,
            credentials=_credentials(deployment, mutation),
        )
    assert mutation.caught_by in report.failed_names(), report.summary()
    assert report.exit_code == 1


# -- misbehaving targets end the run (slow) -------------------------------------------------------


def _stopped(report: Report, why: str) -> set[str]:
    """The checks the run stopped for ``why`` (each says so, naming the check that reports it)."""
    return {r.name for r in report.results if (r.skip_reason or "").startswith(f"stopped: {why}")}


@pytest.mark.slow
@pytest.mark.req("SES-ST-6", "SES-ST-7")
def test_a_target_that_never_lets_a_session_end_ends_the_run_with_a_verdict() -> None:
    started = time.monotonic()
    with _deployment(NEVER_ENDING) as deployment:
        report = _run(deployment, max_examples=0)
    assert report.exit_code == 1, report.summary()
    drained = report.result("session_timers").failures
    assert drained and "still ending" in drained[0].message, report.summary()
    # Once its sessions hold the key's cap for good, what needs a session says so, quickly.
    stopped = _stopped(report, "the key's session cap is held by sessions that do not end")
    assert {"session_lifecycle", "session_timers_probe", "cap_probe"} <= stopped
    assert "NOT CONFORMING" in report.verdict()
    assert time.monotonic() - started < 180


@pytest.mark.slow
@pytest.mark.req("LIM-3", "EP-SESS-5")
def test_a_target_that_refuses_every_create_ends_the_run_with_a_verdict() -> None:
    started = time.monotonic()
    with _deployment(ALWAYS_RATE_LIMITED) as deployment:
        report = _run(deployment, max_examples=0)
    assert report.exit_code == 1, report.summary()
    assert "create_rate_limit" in report.failed_names()
    stopped = _stopped(report, "the target refuses this key's creates where the seed admits them")
    assert {"session_lifecycle", "session_create_bounds", "cap_probe"} <= stopped
    assert time.monotonic() - started < 180


@pytest.mark.slow
def test_a_target_that_stalls_every_request_ends_the_run_with_a_verdict() -> None:
    """Every request is held 30 s: two time out (at the 20 s default) and the run stops,
    saying why, with what it had checked."""
    started = time.monotonic()
    with _deployment(wrap=_stalled) as deployment:
        report = _run(deployment, max_examples=0, timeout=20.0)
        took = time.monotonic() - started
        time.sleep(STALL - 20.0 + 1.0)  # let the server finish the requests it still holds
    assert report.exit_code == 2, report.summary()
    assert report.aborted is not None and "stopped answering" in report.aborted
    assert "STOPPED" in report.verdict()
    assert took < 2 * 20.0 + 15


STALL = 30.0


def _stalled(app: Any, keys: dict[str, str]) -> Any:
    return stalling(STALL)(app, keys)
