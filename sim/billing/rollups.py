"""One organization's usage rows rolled up by what the usage summary tells apart (RES-USAGE-1..3).

Why: ``GET /v1/usage`` must cost what its window costs to answer, not what the organization's
history in it costs: a busy organization writes tens of thousands of rows a month, and a summary
that reads each of them takes tens of milliseconds. The summary's every figure is a sum over the
window's usage rows, split by a few things: the row's attribution (surface, model, quality,
mode, operation, embed), whether its model is internal, its kind, whether it is a session's
charge, and its local date. So the rows are kept by group (``Group``: the first four of those),
each group with its rows' times in order and the running sums of their credits, billable seconds
and first charges of a session: the sum of a group's rows in any time range is two bisections
and a subtraction, and a summary's cost is its groups times its days, whatever the rows.

The rollup is folded from the organization's time-ordered rows when a summary asks
(``UsageRollup.fold``), so writing a row costs nothing more; a row filed before the rows already
folded (dated earlier than they are) or taken back makes the next summary fold again from the
start.

Sessions: the summary counts the distinct sessions with a charge in the window. A session's
charge rows are written together, at one time, so each session is counted at its first charge
row (``marks``); a session charged at two different times (``spread``) is counted from its rows
instead.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable

from sim.billing.rules import ATTRIBUTION, ENTRY_KINDS, KIND_RULES
from sim.billing.storage import KIND_CODES, LedgerRows

__all__ = ["USAGE_KINDS", "Group", "GroupKey", "Sums", "UsageRollup"]

#: The codes of the kinds that are customer usage (``KindRule.usage``).
USAGE_KINDS = frozenset(code for code, kind in enumerate(ENTRY_KINDS) if KIND_RULES[kind].usage)
_CHARGE = KIND_CODES["charge"]
_SURFACE = ATTRIBUTION.index("billing_surface")


#: What a group's rows share: attribution code, internal model, kind code, and whether they
#: are a session's charge.
GroupKey = tuple[int, int, int, bool]


class Sums:
    """Rows in time order (ties in append order) and the running sum of their credits
    (``cum_credits[i]``: the sum over the first ``i`` rows)."""

    __slots__ = ("cum_credits", "times")

    def __init__(self) -> None:
        self.times = array("d")
        self.cum_credits = array("q", [0])

    def span(self, start: float, end: float) -> tuple[int, int]:
        """The indexes ``[first, last)`` of the rows dated in ``[start, end)``."""
        first = bisect_left(self.times, start)
        return first, bisect_left(self.times, end, first)


class Group(Sums):
    """A group's ``Sums``, its rows, and the running sums of their billable seconds and marks."""

    __slots__ = ("cum_marks", "cum_seconds", "rows")

    def __init__(self) -> None:
        super().__init__()
        self.rows = array("I")
        self.cum_seconds = array("q", [0])
        self.cum_marks = array("I", [0])


class UsageRollup:
    """One organization's usage rows by group, and by billing surface alone (what the daily
    slice tells apart), folded up to its ``folded`` first rows in time order; the sessions
    charged at more than one time (``spread``)."""

    __slots__ = ("folded", "groups", "spread", "surfaces")

    def __init__(self) -> None:
        self.folded = 0
        self.groups: dict[GroupKey, Group] = {}
        self.surfaces: dict[str | None, Sums] = {}
        self.spread: set[str] = set()

    def moved(self, position: int) -> None:
        """A row was filed at, or taken from, ``position`` of the time order: fold again if
        that is among the rows folded."""
        if position < self.folded:
            self._restart()

    def spread_session(self, session_id: str) -> None:
        """``session_id`` is charged at two different times: count it from its rows."""
        if session_id not in self.spread:
            self.spread.add(session_id)
            self._restart()  # its first charge may be marked already

    def _restart(self) -> None:
        self.folded, self.groups, self.surfaces = 0, {}, {}

    def fold(
        self,
        by_time: array[int],
        rows: LedgerRows,
        first_rows: dict[str, int],
        first_charge: Callable[[str], int | None],
    ) -> UsageRollup:
        """Add the rows filed since the last fold (``by_time``: the organization's rows in time
        order) to their groups; ``first_rows``: each session's first row times 8 plus the count
        of its first rows (``LedgerIndexes.sessions``)."""
        groups, surfaces, spread = self.groups, self.surfaces, self.spread
        kinds, times, credits = rows.kinds, rows.times, rows.credits
        seconds, internal, session_ids = rows.billable_seconds, rows.internal, rows.session_ids
        attributions, values = rows.attribution_codes, rows.attributions.values
        for position in range(self.folded, len(by_time)):
            row = by_time[position]
            kind = kinds[row]
            if kind not in USAGE_KINDS:
                continue
            session_id = session_ids[row]
            charge = kind == _CHARGE and session_id is not None
            code = attributions[row]
            key = (code, internal[row], kind, charge)
            group = groups.get(key)
            if group is None:
                group = groups[key] = Group()
            mark = False
            if charge and session_id not in spread:  # its first charge: its first row, mostly
                assert session_id is not None
                first = first_rows.get(session_id, -8) >> 3
                mark = first == row or (first < row and first_charge(session_id) == row)
            at, amount = times[row], credits[row]
            group.times.append(at)
            group.rows.append(row)
            group.cum_credits.append(group.cum_credits[-1] + amount)
            group.cum_seconds.append(group.cum_seconds[-1] + seconds[row])
            group.cum_marks.append(group.cum_marks[-1] + mark)
            surface = values[code][_SURFACE]
            sums = surfaces.get(surface)
            if sums is None:
                sums = surfaces[surface] = Sums()
            sums.times.append(at)
            sums.cum_credits.append(sums.cum_credits[-1] + amount)
        self.folded = len(by_time)
        return self
