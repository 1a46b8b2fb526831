"""Looking a move up in a lifecycle's transition table: one rule for every table.

Sessions, runs, run deletions, avatars and webhook deliveries each declare their lifecycle as a
table keyed by (current status, trigger), the status ``None`` before the thing exists. A move
that is not a row of its table is a bug in the simulator, never a client's fault: it raises
``InternalError``, so an illegal move surfaces loudly in tests instead of corrupting a record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from sim.errors import InternalError

__all__ = ["row_of"]

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")


def row_of(table: Mapping[tuple[S, T], R], current: S, trigger: T, lifecycle: str) -> R:
    """The row of ``table`` that ``trigger`` takes from ``current`` (``lifecycle`` names the
    table in the error)."""
    row = table.get((current, trigger))
    if row is None:
        raise InternalError(
            "internal_error", f"{lifecycle}: no transition {trigger!r} from {current!r}."
        )
    return row
