"""Schemathesis over the whole spec against the in-process facade finds nothing (HAR-1).

The default run generates at least 2,000 cases across every phase (examples, coverage, fuzzing
positive and negative, stateful through the spec's links) with every built-in check; the
``slow`` run generates at least 10,000. See ``tests/asgi/fuzzing.py`` for the configuration and
why it deviates from the defaults where it does.
"""

from __future__ import annotations

import pytest

from tests.asgi.fuzzing import FuzzReport, fuzz

#: Checks schemathesis runs on every response; each must have run at least once.
BUILT_IN_CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
}

PHASES = {"examples", "coverage", "fuzzing", "stateful"}


def _assert_clean(report: FuzzReport, minimum_cases: int) -> None:
    assert report.failures == [], report.summary()
    assert report.errors == [], report.summary()
    assert report.stop_reason == "completed", report.summary()
    assert report.cases >= minimum_cases, report.summary()
    assert set(report.cases_by_phase) == PHASES, report.summary()
    assert all(report.cases_by_phase[phase] > 0 for phase in PHASES), report.summary()
    assert set(report.checks_run) >= BUILT_IN_CHECKS, report.checks_run


@pytest.mark.req("HAR-1", "ERR-1", "ERR-2", "ERR-3", "ERR-4", "AUTH-2", "AUTH-3")
def test_fuzzing_the_whole_spec_finds_nothing() -> None:
    _assert_clean(fuzz(max_examples=70, seed=1), minimum_cases=2_000)


@pytest.mark.slow
@pytest.mark.req("HAR-1", "ERR-1", "ERR-2", "ERR-3", "ERR-4", "AUTH-2", "AUTH-3")
def test_fuzzing_the_whole_spec_at_length_finds_nothing() -> None:
    _assert_clean(fuzz(max_examples=560, seed=2), minimum_cases=10_000)
