"""HAR-6: each deliberate fault in a mutated facade is reported by the check named for it, and
the unmutated facade passes the same run."""

from __future__ import annotations

import pytest

from harness.conformance.runner import RunOptions, run
from tests.conformance.mutations import MUTATIONS, Mutation
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-6", "HAR-2")


def test_the_unmutated_facade_passes() -> None:
    report = run(simulated().target, RunOptions(max_examples=2, seed=3))
    assert report.failed_names() == [], report.summary()


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_each_mutation_is_caught_by_name(mutation: Mutation) -> None:
    sim = simulated(wrap=mutation.wrap)
    report = run(sim.target, RunOptions(max_examples=2 if mutation.fuzz else 0, seed=3))
    assert report.exit_code == 1
    assert mutation.caught_by in report.failed_names(), report.summary()
    failure = report.result(mutation.caught_by).failures[0]
    assert failure.message
    if failure.curl is not None:
        assert sim.credentials.api not in failure.curl
