"""Every session's transitions, as raw values in columns (SIM-2, GAP-SES-1).

A transition is appended as raw values (the simulated time, the trigger and target status packed
in one byte, and the position of the same session's previous transition; the source status is
the previous target) and read back as ``Transition`` records. A session's history is read by
walking its own chain back from its latest transition, without scanning anyone else's. With
``keep=False`` nothing is kept.
"""

from __future__ import annotations

from array import array

from sim.lifecycle import STATUSES, TRIGGERS, SessionStatus, Trigger
from sim.sessions.records import Transition

__all__ = ["TransitionLog"]

_STATUS_CODE = {status: code for code, status in enumerate(STATUSES)}
_TRIGGER_CODE = {trigger: code for code, trigger in enumerate(TRIGGERS)}
_STATUS_COUNT = len(STATUSES)


class TransitionLog:
    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.times = array("d")
        self.moves = array("B")  # trigger * len(STATUSES) + target
        self._previous = array("i")  # the session's previous transition, -1 for its first
        self._last = array("i")  # by session row: its latest transition

    def append(self, session: int, at: float, trigger: Trigger, target: SessionStatus) -> None:
        if not self.keep:
            return
        last = self._last
        if session >= len(last):  # rows are numbered in creation order: grow in blocks
            last.extend(array("i", [-1]) * max(4096, session + 1 - len(last)))
        self._previous.append(last[session])
        last[session] = len(self.times)
        self.times.append(at)
        self.moves.append(_TRIGGER_CODE[trigger] * _STATUS_COUNT + _STATUS_CODE[target])

    def of(self, session: int) -> tuple[Transition, ...]:
        """The session's transitions, oldest first."""
        chain: list[int] = []
        index = self._last[session] if session < len(self._last) else -1
        while index >= 0:
            chain.append(index)
            index = self._previous[index]
        chain.reverse()
        steps: list[Transition] = []
        source: SessionStatus | None = None
        for index in chain:
            trigger, status = divmod(self.moves[index], _STATUS_COUNT)
            target = STATUSES[status]
            steps.append(Transition(self.times[index], source, TRIGGERS[trigger], target))
            source = target
        return tuple(steps)

    def __len__(self) -> int:
        return len(self.times)
