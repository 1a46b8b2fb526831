"""Domain errors survive SimPy's process boundary and keep the envelope's fields (ERR-4)."""

from __future__ import annotations

from typing import Any

import pytest
import simpy

from sim.errors import DomainError, QuotaExceeded, Unprocessable


@pytest.mark.req("ERR-4")
def test_errors_carry_type_code_param() -> None:
    error = Unprocessable("validation.range", "limit must be 1..100", param="limit")
    assert (error.type, error.code, error.param, str(error)) == (
        "unprocessable",
        "validation.range",
        "limit",
        "limit must be 1..100",
    )


@pytest.mark.req("ERR-4")
def test_an_error_raised_in_a_process_reaches_the_caller_intact() -> None:
    env = simpy.Environment()

    def proc() -> Any:
        yield env.timeout(1)
        raise QuotaExceeded("concurrent_sessions", "too many")

    env.process(proc())
    with pytest.raises(QuotaExceeded) as excinfo:
        env.run()
    assert isinstance(excinfo.value, DomainError)
    assert excinfo.value.code == "concurrent_sessions"
