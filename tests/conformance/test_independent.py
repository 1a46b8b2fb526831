"""HAR-11: the harness's power on faults nobody wrote checks for, and exit 0 for a conforming
deployment that reads the seed's open points its own way.

The target is the independent implementation (``tests/independent``), written from the seed
alone by someone who never read ``harness/conformance``. Its two readings must each pass the
README's complete invocation with exit 0; each of its faults must be named (exit 1), over real
HTTP on its scaled clock, but those ``UNREACHABLE`` lists (a parameter, path or plan the seed
does not name), which may be at most a tenth of them. ``make test`` runs one short clean run;
the campaign and the run at the wall clock's own pace are ``slow``.
"""

from __future__ import annotations

import time

import pytest

from tests.conformance.independent_runs import (
    FACTOR,
    UNREACHABLE,
    UNREACHABLE_UNDER,
    against,
    reading_of,
)
from tests.independent.faults import FAULTS

pytestmark = pytest.mark.req("HAR-11", "HAR-2", "HAR-5")

#: Each fault with the reading it is served under (the two alternate by name), but those out of
#: reach.
CAMPAIGN = [
    (name, reading_of(index))
    for index, name in enumerate(sorted(FAULTS))
    if name not in UNREACHABLE and (name, reading_of(index)) not in UNREACHABLE_UNDER
]


def _exits_0(report: object) -> None:
    from harness.conformance.report import Report

    assert isinstance(report, Report)
    assert report.failed_names() == [], report.summary()
    assert report.names("incomplete") == [], report.summary()
    assert report.exit_code == 0, report.summary()
    assert report.names("beyond_time") == ["idempotency_window"]


def test_the_faults_out_of_reach_are_few_and_each_says_why() -> None:
    assert set(UNREACHABLE) <= set(FAULTS)
    assert {name for name, _ in UNREACHABLE_UNDER} <= set(FAULTS)
    out_of_reach = len(FAULTS) - len(CAMPAIGN)
    assert out_of_reach == len(UNREACHABLE) + len(UNREACHABLE_UNDER)
    assert out_of_reach <= len(FAULTS) // 10, "power below 90 % by construction"
    assert all(len(why) > 30 for why in [*UNREACHABLE.values(), *UNREACHABLE_UNDER.values()])
    assert len(FAULTS) >= 40


def test_a_short_run_of_a_clean_reading_exits_0() -> None:
    """The one real-time run of ``make test``: reading b (a token bucket, 404 across tenants,
    clamped pages, images failed in fitting...), a brief fuzz."""
    _exits_0(against("b", max_examples=3))


@pytest.mark.slow
@pytest.mark.parametrize("reading", ["a", "b"])
def test_each_clean_reading_exits_0_with_the_complete_invocation(reading: str) -> None:
    _exits_0(against(reading))


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "reading"), CAMPAIGN, ids=[name for name, _ in CAMPAIGN])
def test_each_fault_is_named(fault: str, reading: str) -> None:
    report = against(reading, (fault,))
    assert report.exit_code == 1, f"{fault} ({reading}): {FAULTS[fault].effect}\n" + (
        report.summary()
    )


@pytest.mark.slow
def test_a_clean_run_at_the_wall_clocks_pace_takes_at_most_six_minutes() -> None:
    """The real-time path: the implementation's clock is the wall's (factor 1), and the whole
    default run, fuzz included, ends within six minutes with exit 0."""
    started = time.monotonic()
    report = against("a", factor=1.0)
    took = time.monotonic() - started
    _exits_0(report)
    assert took <= 360, took
    assert FACTOR < 1
