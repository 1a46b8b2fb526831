"""The conformance harness against the independent implementation (``tests/independent``): the
README's complete invocation, over real HTTP, on the implementation's scaled clock.

Why here: the independent implementation was written from the seed alone by someone who never
read the harness, reads the seed's open points its own way (two readings), and carries faults
nobody wrote checks for. A clean reading must exit 0; a fault must be named (exit 1).

``UNREACHABLE`` lists the faults no run can show from the outside, each with why: they break a
rule about a parameter or path the seed does not name (a deployment may call it anything), or
about a plan the run cannot tell apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.conformance.clock import RealClock
from harness.conformance.inputs import Inputs
from harness.conformance.report import Report
from harness.conformance.runner import RunOptions, run
from harness.conformance.target import Credentials, Target
from tests.independent.serving import serve

__all__ = ["FACTOR", "SMALL_POOL", "UNREACHABLE", "UNREACHABLE_UNDER", "against", "reading_of"]

#: The implementation's time factor for the campaign: its clock runs twenty times the wall's.
FACTOR = 0.05

#: Faults that show only when the target's pool runs out of workers: served with one worker.
SMALL_POOL = frozenset(
    {"at_capacity_without_retry_after", "startup_timeout_ignored", "no_capacity_code_wrong"}
)

#: Faults no outside run can name, and why (the seed leaves the name or the plan open).
UNREACHABLE: dict[str, str] = {
    "avatar_org_filter_includes_stock": "the avatar filter's parameter name is not shown",
    "avatar_search_case_sensitive": "the avatar search's parameter name is not shown",
    "session_status_filter_ignored": "the session status filter's parameter name is not shown",
    "pipecat_relay_type_unchecked": "the pipecat relay type's field name is not shown",
    "max_duration_not_clamped": "the other plan's clamp is not shown anywhere the run can read "
    "it, and a session would have to run past it",
    "run_delete_not_enterprise_only": "which plans are enterprise accounts is not shown (the "
    "other organization's plan key names a plan the run cannot place)",
    "usage_daily_ignores_timezone": "the usage timezone parameter's name is not shown",
}

#: Faults out of reach only under the reading the campaign serves them with, and why: that
#: reading names what the seed leaves unnamed otherwise than the conventions do.
UNREACHABLE_UNDER: dict[tuple[str, str], str] = {
    ("cancel_allowed_with_read_scope", "b"): "the cancel path is not shown, and reading b puts it "
    "at POST /v1/runs/{id}:cancel, where the run does not look",
}


def reading_of(index: int) -> str:
    """The reading a fault is served under in the campaign: the two alternate by name."""
    return "a" if index % 2 == 0 else "b"


@contextmanager
def _served(
    reading: str, faults: tuple[str, ...], factor: float, workers: int
) -> Iterator[dict[str, Any]]:
    with serve(reading=reading, faults=faults, time_factor=factor, workers=workers) as keys:
        yield keys


def against(
    reading: str,
    faults: tuple[str, ...] = (),
    *,
    factor: float = FACTOR,
    max_examples: int = 20,
    workers: int | None = None,
) -> Report:
    """The README's complete invocation against the implementation serving ``reading`` with
    ``faults``: every key, every model and the run body it publishes, real waits scaled by its
    time factor."""
    pool = workers if workers is not None else (1 if set(faults) & SMALL_POOL else 8)
    with _served(reading, faults, factor, pool) as keys:
        credentials = Credentials(
            api=keys["api_key"],
            other_org=keys["other_org_key"],
            runs_read=keys["runs_read_key"],
            runs_write=keys["runs_write_key"],
            revoked=keys["revoked_key"],
        )
        target = Target.remote(keys["base_url"], credentials, timeout=20.0)
        inputs = Inputs(models=tuple(keys["models"]), run_bodies=(keys["run_json"],))
        try:
            return run(
                target,
                RunOptions(max_examples=max_examples, seed=0, inputs=inputs,
                           clock=RealClock(factor=factor)),
            )  # fmt: skip
        finally:
            target.close()
