"""Every session status a run sees, in the order it saw them, and the rule that terminal is final.

Why one record for the whole run: a session leaving ``ended``, ``failed`` or ``canceled`` breaks
the seed (SES-ST-8) wherever it shows, in a retrieve, an end answer or a page of a list, and a run
must not wait on such a session again (it may never end). Each session id is judged once: the
first time it is seen out of a terminal state it fails ``terminal_states_final`` and is marked
``broken``, so the harness's waits and clean-up leave it alone.

The watch of the current run lives in a context variable, set by the runner for the run; outside
a run (schemathesis's own command line) a process-wide watch stands in.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.checks import CheckFailed, response_check
from harness.conformance.operations import operation_of
from harness.conformance.responses import resources_in
from harness.target import Exchange

__all__ = ["PLACED", "TERMINAL", "SessionWatch", "current_watch", "mentions", "watching"]

#: The seed's terminal session states.
TERMINAL = frozenset({"ended", "failed", "canceled"})
#: Statuses that show a session on a worker.
PLACED = frozenset({"starting", "running", "ending"})


def mentions(value: Any, word: str) -> bool:
    """Whether ``word`` is a string somewhere in ``value`` (an error's shape is a gap)."""
    if isinstance(value, str):
        return value == word
    if isinstance(value, dict):
        return any(mentions(v, word) for v in value.values())
    if isinstance(value, list):
        return any(mentions(v, word) for v in value)
    return False


@dataclass
class SessionWatch:
    """Each session's statuses as seen, and the sessions that broke the terminal rule."""

    history: dict[str, list[str]] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)

    def see(self, session_id: str, status: str) -> tuple[bool, str | None]:
        """Record one observation: whether it tested the rule (the session had been seen
        terminal), and a message when it takes the session out of a terminal state (reported
        once per session)."""
        seen = self.history.setdefault(session_id, [])
        terminal = next((s for s in seen if s in TERMINAL), None)
        if not seen or seen[-1] != status:
            seen.append(status)
        if terminal is None:
            return False, None
        if status == terminal or session_id in self.broken:
            return True, None
        self.broken.add(session_id)
        return True, f"session {session_id} was {terminal} and later showed {status!r}"

    def last(self, session_id: str) -> str | None:
        seen = self.history.get(session_id)
        return seen[-1] if seen else None

    def statuses(self, session_id: str) -> tuple[str, ...]:
        return tuple(self.history.get(session_id, ()))


_WATCH: contextvars.ContextVar[SessionWatch | None] = contextvars.ContextVar(
    "session_watch", default=None
)
_PROCESS_WATCH = SessionWatch()


def current_watch() -> SessionWatch:
    """The watch of the run in progress (a process-wide one outside a run)."""
    return _WATCH.get() or _PROCESS_WATCH


@contextmanager
def watching(watch: SessionWatch) -> Iterator[SessionWatch]:
    """Make ``watch`` the current run's watch for the block."""
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)


def sessions_in(exchange: Exchange) -> Iterator[dict[str, Any]]:
    """Every session resource a success answer of the contract holds."""
    if not 200 <= exchange.status < 300:
        return
    operation = operation_of(exchange)
    if operation is None:
        return
    for kind, resource in resources_in(operation.operation_id, exchange.json()):
        if kind == "session":
            yield resource


@response_check("terminal_states_final", "SES-ST-8")
def terminal_states_final(exchange: Exchange) -> bool:
    """A session seen ended, failed or canceled never shows another status afterwards (in any
    answer: retrieve, end, list)."""
    watch = current_watch()
    applied = False
    if exchange.method == "POST" and "idempotency-key" in {
        name.lower() for name in exchange.request_headers
    }:
        return False  # a create's replay answers the original response, as it was then
    for session in sessions_in(exchange):
        session_id, status = session.get("id"), session.get("status")
        if not isinstance(session_id, str) or not isinstance(status, str):
            continue
        tested, problem = watch.see(session_id, status)
        applied = applied or tested
        if problem is not None:
            raise CheckFailed(problem, exchange)
    return applied


@response_check("unplaced_failure_code", "SES-ST-2", opportunistic=True)
def unplaced_failure_code(exchange: Exchange) -> bool:
    """A session seen failed that was never placed on a worker (no started_at, never seen
    starting or running) failed by the start-up timeout: its error names no_capacity."""
    watch = current_watch()
    applied = False
    for session in sessions_in(exchange):
        session_id = session.get("id")
        if session.get("status") != "failed" or not isinstance(session_id, str):
            continue
        placed = (
            session.get("started_at")
            or session.get("first_frame_at")
            or any(status in PLACED for status in watch.statuses(session_id))
        )
        if placed:
            continue
        applied = True
        if not mentions(session.get("error"), "no_capacity"):
            raise CheckFailed(
                f"session {session_id} failed without being placed, but its error "
                f"{session.get('error')!r} names no no_capacity (the seed's one failure of a "
                "job no worker took)",
                exchange,
            )
    return applied
