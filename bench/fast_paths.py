"""The fast paths the simulator keeps, each beside its reference, and how to run the reference.

A fast path stays only while it saves at least 1 % of a month (``bench_fast_paths`` measures
each one by running the month with its reference in its place); the reference is the plain
code it stands for, and a run gives the same tables with either (``tests/bench``). ``referenced``
puts a fast path's reference in its place for the duration of a ``with`` block: it changes
module and class attributes, so only the benchmark and the tests use it, never a library.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from harness.runner import clients
from harness.runner.picks import WeightedPick
from sim import idempotency, pipeline, tuples
from sim.clock import Clock
from sim.sessions import validation

__all__ = ["FAST_PATHS", "FastPath", "referenced"]


def _never(*_args: Any, **_kwargs: Any) -> None:
    """A cheap reader that never answers: every request takes the general path."""
    return None


@dataclass(frozen=True)
class FastPath:
    name: str
    what: str  # the fast path and its reference, in a line
    #: Each ``(owner, attribute, reference)``: the module or class attribute the fast path is,
    #: and what stands in it to run the reference instead.
    swaps: tuple[tuple[Any, str, Any], ...]


FAST_PATHS: tuple[FastPath, ...] = (
    FastPath(
        "timers",
        "Clock.after pushes a Timer on SimPy's calendar; reference: a SimPy Timeout",
        ((Clock, "after", Clock.after_as_timeout),),
    ),
    FastPath(
        "unread_answers",
        "clients that read no body are answered the id alone; reference: every body rendered",
        ((clients, "READS_BODIES", True),),
    ),
    FastPath(
        "plain_create",
        "a plain create's parameters read in one pass; reference: check_values, then the parser",
        ((validation, "_plain_session_request", _never),),
    ),
    FastPath(
        "weighted_pick",
        "WeightedPick draws with one bisect; reference: Random.choices",
        ((WeightedPick, "__call__", WeightedPick.by_choices),),
    ),
    FastPath(
        "marshal_fingerprint",
        "idempotency fingerprints are marshal snapshots; reference: canonical JSON texts",
        (
            (pipeline, "fingerprint", idempotency.fingerprint_by_text),
            (idempotency, "fingerprint", idempotency.fingerprint_by_text),
            (idempotency, "same_request", idempotency.same_request_by_text),
        ),
    ),
    FastPath(
        "tuple_new",
        "the records a session builds are built by tuple.__new__; reference: their class called",
        ((tuples, "new", tuples.by_call),),
    ),
)


@contextmanager
def referenced(fast_path: FastPath) -> Iterator[None]:
    """Run ``fast_path``'s reference instead of it inside the block."""
    saved = [(owner, name, vars(owner)[name]) for owner, name, _ in fast_path.swaps]
    try:
        for owner, name, reference in fast_path.swaps:
            setattr(owner, name, reference)
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
