"""The API log: every call through ``Platform.call`` and how it ended (SIM-2), as columns.

Each call is appended as five raw values (simulated time, interned operation, organization,
outcome and error type) and read back as ``ApiCall`` records. A log with a ``size`` is a ring: it
keeps the newest ``size`` calls (served mode runs for days; nothing reads its old calls), trimming
its oldest half at a time so an append stays O(1) on average. ``dropped`` counts what left it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from sim.columns import Interner

__all__ = ["ApiCall", "ApiLog"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One entry of the API log: what was asked, by whom, and how it ended (SIM-2)."""

    at: float
    operation_id: str
    org_id: str | None
    outcome: str  # "ok", "replayed" or the error code
    error_type: str | None


class ApiLog:
    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._trimmed = 0
        self.operations: Interner[str] = Interner()
        self.orgs = Interner([""])  # "" for a public call
        self.outcomes: Interner[str] = Interner()
        self.error_types = Interner([""])  # "" for a success
        self.times = array("d")
        self.operation_codes = array("B")
        self.org_codes = array("I")
        self.outcome_codes = array("H")
        self.error_type_codes = array("B")
        # The codes of each (operation, organization, outcome, error type) seen: a call repeats
        # one of a few such combinations, and one lookup replaces four interner calls.
        self._codes: dict[tuple[str, str | None, str, str | None], tuple[int, int, int, int]] = {}

    def append(
        self,
        at: float,
        operation_id: str,
        org_id: str | None,
        outcome: str,
        error_type: str | None,
    ) -> None:
        if self.size == 0:
            self._trimmed += 1
            return
        key = (operation_id, org_id, outcome, error_type)
        codes = self._codes.get(key)
        if codes is None:
            codes = self._codes[key] = (
                self.operations.code(operation_id),
                self.orgs.code(org_id or ""),
                self.outcomes.code(outcome),
                self.error_types.code(error_type or ""),
            )
        self.times.append(at)
        self.operation_codes.append(codes[0])
        self.org_codes.append(codes[1])
        self.outcome_codes.append(codes[2])
        self.error_type_codes.append(codes[3])
        if self.size is not None and len(self.times) >= 2 * self.size:
            self._trim(len(self.times) - self.size)

    @property
    def dropped(self) -> int:
        """Calls that are no longer in the log."""
        return self._trimmed + self._first()

    def _trim(self, count: int) -> None:
        self._trimmed += count
        for column in (
            self.times,
            self.operation_codes,
            self.org_codes,
            self.outcome_codes,
            self.error_type_codes,
        ):
            del column[:count]

    def _first(self) -> int:
        """Index of the oldest call the log shows (the ring may hold up to twice its size)."""
        held = len(self.times)
        return 0 if self.size is None else max(0, held - self.size)

    def call(self, index: int) -> ApiCall:
        return ApiCall(
            at=self.times[index],
            operation_id=self.operations[self.operation_codes[index]],
            org_id=self.orgs[self.org_codes[index]] or None,
            outcome=self.outcomes[self.outcome_codes[index]],
            error_type=self.error_types[self.error_type_codes[index]] or None,
        )

    def __iter__(self) -> Iterator[ApiCall]:
        return (self.call(i) for i in range(self._first(), len(self.times)))

    def __len__(self) -> int:
        return len(self.times) - self._first()
