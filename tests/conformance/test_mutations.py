"""HAR-6: each deliberate fault in a mutated facade is reported by the check named for it.

Every registered check has at least one mutant. In ``make test`` each mutant meets only its check
(and the scenario checks whose traffic reaches the fault), which keeps the sweep to seconds; the
``slow`` sweep runs every check and the fuzz against each mutant and still finds the meant check
among the failures. That the unmutated facade and the gap-variant report nothing is shown by
full runs (``test_run.py``, ``test_contract_only.py``).
"""

from __future__ import annotations

import pytest

from harness.conformance.checks import CHECKS
from harness.conformance.runner import RunOptions, run
from tests.conformance.mutations import MUTATIONS, Mutation
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-6", "HAR-2")


def _cases() -> list[object]:
    return [
        pytest.param(m, id=m.name, marks=pytest.mark.req(*CHECKS[m.caught_by].requirements))
        for m in MUTATIONS
    ]


def _judges(name: str) -> bool:
    """Whether a check judges anything itself (a script that only drives carries no ids)."""
    check = CHECKS[name]
    return check.kind != "scenario" or bool(check.requirements)


def test_every_check_that_judges_has_a_mutant_and_there_are_enough() -> None:
    assert {m.caught_by for m in MUTATIONS} == {name for name in CHECKS if _judges(name)}
    assert len(MUTATIONS) >= 40
    assert len({m.name for m in MUTATIONS}) == len(MUTATIONS)
    for mutation in MUTATIONS:
        assert set(mutation.drive) <= set(CHECKS), mutation.name


def _caught(mutation: Mutation, options: RunOptions) -> None:
    sim = simulated(edits=mutation.edits, api_key=mutation.api_key)
    report = run(sim.target, options)
    assert report.exit_code == 1
    assert mutation.caught_by in report.failed_names(), report.summary()
    failure = report.result(mutation.caught_by).failures[0]
    assert failure.message
    if failure.curl is not None:
        assert sim.keys["unrestricted"] not in failure.curl


@pytest.mark.parametrize("mutation", _cases())
def test_each_mutant_is_reported_by_its_check(mutation: Mutation) -> None:
    only = frozenset({mutation.caught_by, *mutation.drive})
    _caught(mutation, RunOptions(max_examples=2 if mutation.fuzz else 0, seed=3, only=only))


@pytest.mark.slow
@pytest.mark.parametrize("mutation", _cases())
def test_each_mutant_is_reported_among_every_check(mutation: Mutation) -> None:
    _caught(mutation, RunOptions(max_examples=2, seed=3))
