"""The API log: every call through ``Platform.call`` and how it ended (SIM-2), as columns.

Each call is appended as two raw values (simulated time, and the interned code of what it asked
and how it ended) and read back as ``ApiCall`` records. A log with a ``size`` is a ring: it
keeps the newest ``size`` calls (served mode runs for days; nothing reads its old calls), trimming
its oldest half at a time so an append stays O(1) on average. ``dropped`` counts what left it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass

from sim.columns import Column, Interner, Table

__all__ = ["ApiCall", "ApiLog"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One entry of the API log: what was asked, by whom, and how it ended (SIM-2)."""

    at: float
    operation_id: str
    org_id: str | None
    outcome: str  # "ok", "replayed" or the error code
    error_type: str | None


#: What one call asked and how it ended, apart from when: (operation, organization, outcome,
#: error type). A run repeats a few dozen of them, so the log keeps each once.
CallKind = tuple[str, str | None, str, str | None]


class ApiLog:
    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self._trimmed = 0
        #: Two columns: the time of each call and the code of its ``CallKind`` (a run repeats
        #: few kinds).
        self.kinds: Interner[CallKind] = Interner()
        self.times: list[float] = []
        self.kind_codes = array("I")
        self._full = None if size is None else 2 * size  # where the ring trims

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
        self.times.append(at)
        kind = (operation_id, org_id, outcome, error_type)
        self.kind_codes.append(self.kinds.code(kind))
        full = self._full
        if full is not None and len(self.times) >= full:
            self._trim(full // 2)

    @property
    def dropped(self) -> int:
        """Calls that are no longer in the log."""
        return self._trimmed + self._first()

    def _trim(self, count: int) -> None:
        self._trimmed += count
        del self.times[:count]
        del self.kind_codes[:count]

    def _first(self) -> int:
        """Index of the oldest call the log shows (the ring may hold up to twice its size)."""
        held = len(self.times)
        return 0 if self.size is None else max(0, held - self.size)

    def call(self, index: int) -> ApiCall:
        operation_id, org_id, outcome, error_type = self.kinds[self.kind_codes[index]]
        return ApiCall(self.times[index], operation_id, org_id, outcome, error_type)

    def export(self) -> Table:
        """The calls the log shows, oldest first: ``at`` (time) and ``operation_id``,
        ``org_id``, ``outcome`` and ``error_type`` (categories), the fields of ``ApiCall``."""
        first = self._first()
        picked = self.kind_codes[first:]
        kinds = self.kinds.values
        columns = {"at": Column("time", self.times[first:])}
        for index, name in enumerate(("operation_id", "org_id", "outcome", "error_type")):
            columns[name] = Column("category", picked, labels=[k[index] for k in kinds])
        return Table(len(picked), columns)

    def __iter__(self) -> Iterator[ApiCall]:
        return (self.call(i) for i in range(self._first(), len(self.times)))

    def __len__(self) -> int:
        return len(self.times) - self._first()
