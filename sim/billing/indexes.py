"""How the ledger's rows are found without a scan: by organization and time, by session, by run,
and each organization's running totals (SIM-5, PERF-4).

Every billing figure reads one organization's rows, often only a window of them: each
organization keeps its rows in time order (``OrgIndex``), so a window is two bisections, and its
running totals of the pool deltas and run holds, the same numbers a fold over its rows gives
(the tests check that), so a charge never reads its history. A session's rows and a run's rows
are found by id. The indexes are kept as rows are appended and undone with the newest row
(``remove``); the rows themselves are ``sim.billing.storage``'s.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

from sim.billing.rollups import UsageRollup
from sim.billing.storage import KIND_CODES, LedgerRows

__all__ = ["LedgerIndexes", "OrgIndex"]

_HOLD, _UNHOLD = KIND_CODES["reservation"], (KIND_CODES["settlement"], KIND_CODES["release"])
_CHARGE = KIND_CODES["charge"]


class OrgIndex:
    """One organization's rows in time order (ties in append order), its running totals of the
    pool deltas and of its run holds, and its usage rollup."""

    __slots__ = ("by_time", "code", "granted", "held", "included", "rollover", "times", "usage")

    def __init__(self, code: int) -> None:
        self.code = code  # in the storage's ``orgs``
        self.times = array("d")  # sorted
        self.by_time = array("I")  # the rows, in the order of ``times``
        self.rollover = self.included = self.granted = self.held = 0
        self.usage = UsageRollup()

    def add(
        self, row: int, kind: int, at: float, credits: int, deltas: tuple[int, int, int]
    ) -> None:
        """File a new ``row`` dated ``at`` after every row of its time, and count its deltas
        and hold in the running totals."""
        times = self.times
        if not times or at >= times[-1]:  # dated at or after the newest: the common case
            times.append(at)
            self.by_time.append(row)
        else:
            position = bisect_right(times, at)
            times.insert(position, at)
            self.by_time.insert(position, row)
            self.usage.moved(position)
        self.rollover += deltas[0]
        self.included += deltas[1]
        self.granted += deltas[2]
        if kind == _HOLD:
            self.held += credits
        elif kind in _UNHOLD:
            self.held -= credits

    def remove(
        self, row: int, kind: int, at: float, credits: int, deltas: tuple[int, int, int]
    ) -> None:
        """Undo ``add`` of the newest row (it sits after every row of its time)."""
        position = bisect_right(self.times, at) - 1
        while self.by_time[position] != row:  # rows of the same time, newest last
            position -= 1
        del self.times[position]
        del self.by_time[position]
        self.usage.moved(position)
        self.rollover -= deltas[0]
        self.included -= deltas[1]
        self.granted -= deltas[2]
        if kind == _HOLD:
            self.held -= credits
        elif kind in _UNHOLD:
            self.held += credits


class LedgerIndexes:
    """Every index over one ledger's ``rows``."""

    def __init__(self, rows: LedgerRows) -> None:
        self._rows = rows
        self.orgs: dict[str, OrgIndex] = {}
        # A session's rows are written together when it is charged: first row * 8 + count.
        self.sessions: dict[str, int] = {}
        self.late_session_rows: dict[str, list[int]] = {}  # e.g. a refund days later
        self.runs: dict[str, list[int]] = {}

    def org(self, org_id: str) -> OrgIndex:
        org = self.orgs.get(org_id)
        if org is None:
            org = self.orgs[org_id] = OrgIndex(self._rows.orgs.code(org_id))
        return org

    def add(
        self,
        org: OrgIndex,
        row: int,
        kind: int,
        at: float,
        credits: int,
        deltas: tuple[int, int, int],
        session_id: str | None,
        run_id: str | None,
    ) -> None:
        """Index the newest ``row`` (its values given) of the organization ``org``."""
        org.add(row, kind, at, credits, deltas)
        if session_id is not None:
            if kind == _CHARGE and session_id in self.sessions:
                self._check_spread(org, session_id, at)
            self._file_session_row(session_id, row)
        if run_id is not None:
            self.runs.setdefault(run_id, []).append(row)

    def file_charge(
        self, org: OrgIndex, session_id: str, first: int, count: int, at: float
    ) -> None:
        """Index the ``count`` rows from ``first`` (filed in ``org`` already) as the session's
        charge of ``at``."""
        if session_id in self.sessions:
            self._check_spread(org, session_id, at)
        elif 0 < count < 8:  # the common case: packed as one run
            self.sessions[session_id] = first * 8 + count
            return
        for row in range(first, first + count):
            self._file_session_row(session_id, row)

    def _check_spread(self, org: OrgIndex, session_id: str, at: float) -> None:
        """A session charged again: if at another time than its first charge, its charges are
        spread (``UsageRollup.spread``; while they are not, they all share that time)."""
        first = self.first_charge(session_id, org.code)
        if first is not None and self._rows.times[first] != at:
            org.usage.spread_session(session_id)

    def remove(self, row: int) -> None:
        """Undo ``add`` of the newest ``row`` (still in the storage)."""
        rows = self._rows
        org_id = rows.org_id(row)
        org = self.orgs[org_id]
        org.remove(row, rows.kinds[row], rows.times[row], rows.credits[row], rows.deltas(row))
        if not org.by_time:  # its first row: the organization was not in the ledger before
            del self.orgs[org_id]
        session_id, run_id = rows.session_ids[row], rows.run_ids[row]
        if session_id is not None:
            late = self.late_session_rows.get(session_id)
            if late:
                late.pop()
                if not late:
                    del self.late_session_rows[session_id]
            else:
                packed = self.sessions[session_id]
                if packed % 8 > 1:
                    self.sessions[session_id] = packed - 1
                else:
                    del self.sessions[session_id]
        if run_id is not None:
            run_rows = self.runs[run_id]
            run_rows.pop()
            if not run_rows:
                del self.runs[run_id]

    def _file_session_row(self, session_id: str, row: int) -> None:
        """Index ``row`` among the session's rows: the next of its first run of rows (kept as
        first row * 8 + count), or a late one (e.g. a refund days later)."""
        packed = self.sessions.get(session_id)
        if packed is None:
            self.sessions[session_id] = row * 8 + 1
        elif sum(divmod(packed, 8)) == row and packed % 8 < 7:
            self.sessions[session_id] = packed + 1  # the next row of the same charge
        else:
            self.late_session_rows.setdefault(session_id, []).append(row)

    def session_rows(self, session_id: str) -> list[int]:
        """The session's rows, in append order."""
        packed = self.sessions.get(session_id)
        if packed is None:
            return []
        first, count = divmod(packed, 8)
        return [*range(first, first + count), *self.late_session_rows.get(session_id, ())]

    def first_charge(self, session_id: str, org_code: int) -> int | None:
        """The session's first ``charge`` row in the organization of ``org_code``, if any."""
        kinds, orgs = self._rows.kinds, self._rows.org_codes
        return next(
            (
                row
                for row in self.session_rows(session_id)
                if kinds[row] == _CHARGE and orgs[row] == org_code
            ),
            None,
        )

    def charge_times(self, session_id: str, org_code: int) -> list[float]:
        """The times of the session's ``charge`` rows in the organization of ``org_code``."""
        rows = self._rows
        return [
            rows.times[row]
            for row in self.session_rows(session_id)
            if rows.kinds[row] == _CHARGE and rows.org_codes[row] == org_code
        ]
