"""Every session's transitions, as raw values in columns (SIM-2, GAP-SES-1).

While a session lives, its transitions are two short lists on its working state
(``SessionState.move_times``, ``move_codes``): the simulated time, and the trigger and target
status packed in one byte (``SessionTransition.code``), which the service appends as it moves
the session when the log ``keep``s transitions. When it turns terminal the lists are written to
the columns in one go, so a finished session's transitions are contiguous and the store only
keeps where they start and how many there are. They are read back as ``Transition`` records
(the source status is the previous target). With ``keep=False`` nothing is kept.

The byte-sized columns are ``bytearray``s, not ``array("B")``: every finished session extends
them, and an ``array`` parses each item it stores with ``PyArg_Parse`` (about twice the cost).
"""

from __future__ import annotations

from array import array

from sim.lifecycle import STATUSES, TRIGGERS, SessionStatus
from sim.sessions.records import SessionState, Transition

__all__ = ["TransitionLog"]

_STATUS_COUNT = len(STATUSES)
_GROW = 4096


class TransitionLog:
    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.times = array("d")
        self.moves = bytearray()  # ``move_code``: trigger * len(STATUSES) + target (< 256)
        self._first = array("I")  # by session row: its first transition in the columns
        self._count = bytearray()  # by session row: how many (0 until it is finished)

    def close(self, state: SessionState) -> None:
        """Write a finished session's transitions to the columns."""
        if not self.keep:
            return
        row = state.number
        if row >= len(self._first):
            grow = max(_GROW, row + 1 - len(self._first))
            self._first.frombytes(bytes(self._first.itemsize * grow))
            self._count += bytes(grow)
        self._first[row] = len(self.times)
        self._count[row] = len(state.move_codes)
        self.times.extend(state.move_times)
        self.moves.extend(state.move_codes)
        state.move_times, state.move_codes = [], []

    def of(self, state: SessionState) -> tuple[Transition, ...]:
        """The session's transitions, oldest first."""
        row = state.number
        steps: list[tuple[float, int]]
        if state.move_codes or row >= len(self._count):
            steps = list(zip(state.move_times, state.move_codes, strict=True))
        else:
            first, end = self._first[row], self._first[row] + self._count[row]
            steps = list(zip(self.times[first:end], self.moves[first:end], strict=True))
        history: list[Transition] = []
        source: SessionStatus | None = None
        for at, move in steps:
            trigger, status = divmod(move, _STATUS_COUNT)
            target = STATUSES[status]
            history.append(Transition(at, source, TRIGGERS[trigger], target))
            source = target
        return tuple(history)

    def __len__(self) -> int:
        return len(self.times)
