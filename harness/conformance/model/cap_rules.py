"""The concurrency caps: one live session per key, a few per organization.

Why judged from the sessions the run knows: a refusal ``concurrent_sessions`` is right only when
a cap is reached, and an acceptance only when none is. The run knows every session its keys made
and their statuses as last seen; what it cannot see (another key of the same organization, a
status changed since) is settled by a confirmation read before anything fails.

* A key whose every session was seen terminal before the create was sent holds no slot: a
  refusal then is justified only by the organization's cap, so the run reads the organization's
  list, and when no session there is live the refusal fails.
* A key whose last seen session was ``starting`` or ``running`` before a create was sent, and
  still so when seen again after the create was accepted, held it throughout: the acceptance
  broke the cap of one per key. A session seen ``queued`` or ``ending`` proves nothing (a cap
  may count placed sessions only, and let a draining one go: readings the seed leaves open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.model.session_book import SessionBook
from harness.conformance.model.session_facts import TERMINAL, SessionFacts
from harness.conformance.target import Exchange

__all__ = ["CAPS", "CapCheck", "acceptance_suspects", "refusal_suspect"]

CAPS = model_rule("concurrency_caps")

#: Statuses that surely hold a slot under every reading of "concurrent": on a worker and not
#: draining (a cap may count only placed sessions, and a draining one may already be let go).
_HOLDING = frozenset({"starting", "running"})


def _terminal_before(facts: SessionFacts, order: int) -> bool:
    return any(status in TERMINAL and seen < order for _, status, seen in facts.statuses)


def _held_before(facts: SessionFacts, order: int) -> bool:
    """Whether the session's last status seen before ``order`` surely held a slot."""
    before = [status for _, status, seen in facts.statuses if seen < order]
    return bool(before) and before[-1] in _HOLDING


@dataclass(frozen=True, slots=True)
class CapCheck:
    """A suspicion the run settles with reads: ``sessions`` to read again (by the owner), and
    whether the organization's list must hold no live session for it to fail."""

    exchange: Exchange
    role: str
    sessions: tuple[str, ...]
    message: str
    needs_empty_org: bool
    #: The model's count of observations when the create was answered: a session seen live
    #: after it was live throughout.
    answered: int = 0


def refusal_suspect(
    book: SessionBook, role: str, order: int, exchange: Exchange
) -> CapCheck | None:
    """A ``concurrent_sessions`` refusal of ``role``'s create (answered as the model's
    ``order``-th observation): a suspicion when every session of the key was seen terminal
    before it."""
    mine = book.owned_by(role)
    if any(not _terminal_before(s, order) for s in mine):
        return None  # the key may hold a slot
    return CapCheck(
        exchange,
        role,
        (),
        f"a create was refused concurrent_sessions while every session of its key ("
        f"{len(mine)}) had ended, and the organization lists no live session",
        needs_empty_org=True,
    )


def acceptance_suspects(
    book: SessionBook, role: str, order: int, new_id: str, exchange: Exchange
) -> CapCheck | None:
    """An accepted create of ``role`` (the model's ``order``-th observation): a suspicion when
    the key held a session seen placed before and not seen terminal."""
    held = [
        s.id
        for s in book.owned_by(role)
        if s.id != new_id and _held_before(s, order) and not _terminal_before(s, order)
    ]
    if not held:
        return None
    return CapCheck(
        exchange,
        role,
        tuple(held),
        f"a create was accepted while the key's session {held[0]} was live (seen placed "
        "before, and still live after); the cap is one live session per key",
        needs_empty_org=False,
        answered=order,
    )


def settle(
    check: CapCheck,
    book: SessionBook,
    status_of: Callable[[str], str | None],
    org_live: Callable[[], int | None],
) -> Iterator[Verdict]:
    """Give the suspicion's verdict, from what the run saw after the create or, failing
    that, from reads now."""
    if check.needs_empty_org:
        live = org_live()
        if live == 0:
            yield Verdict.failed(CAPS, check.exchange, check.message)
        else:
            yield Verdict.passed(CAPS, check.exchange, edge=False)
        return
    for session_id in check.sessions:
        facts = book.get(session_id)
        seen_live = facts is not None and any(
            seen > check.answered and status in _HOLDING for _, status, seen in facts.statuses
        )
        if seen_live:
            yield Verdict.failed(CAPS, check.exchange, check.message)
            return
    statuses = [status_of(s) for s in check.sessions]
    if any(status in _HOLDING for status in statuses):
        yield Verdict.failed(CAPS, check.exchange, check.message)
    else:
        yield Verdict.passed(CAPS, check.exchange, edge=False)
