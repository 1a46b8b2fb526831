"""The statuses each kind of resource has, read from the simulator's lifecycle declarations.

Why a module of its own: every helper that names a status (``wait_for`` and kin,
``SessionHistory.assert_path``) refuses one that does not exist before doing anything, and they
all read the same vocabulary: the session, run, avatar and webhook-delivery tables in ``sim``,
which are the contract's.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

__all__ = ["UnknownStatus", "statuses_of", "wanted_statuses"]


class UnknownStatus(ValueError):
    """A status no resource of that kind ever has (a misspelling): refused before waiting."""


def statuses_of(kind: str) -> tuple[frozenset[str], frozenset[str]]:
    """Every status of ``kind`` (``session``, ``run``, ``avatar``, ``delivery``) and the final
    ones, from the simulator's lifecycle declarations."""
    if kind == "session":
        from sim.lifecycle import STATUSES, TERMINAL

        return frozenset(STATUSES), frozenset(TERMINAL)
    if kind == "run":
        from sim.runs.lifecycle import RUN_TERMINAL, RunStatus

        return frozenset(s.value for s in RunStatus), frozenset(s.value for s in RUN_TERMINAL)
    if kind == "avatar":
        from sim.avatars.lifecycle import AVATAR_STATUSES, FINAL_STATUSES

        return frozenset(AVATAR_STATUSES), frozenset(FINAL_STATUSES)
    if kind == "delivery":
        from typing import get_args

        from sim.webhooks import FINAL_DELIVERY_STATUSES, DeliveryStatus

        return frozenset(get_args(DeliveryStatus)), frozenset(FINAL_DELIVERY_STATUSES)
    raise ValueError(f"no statuses for {kind!r}")


def wanted_statuses(kind: str, status: str | Collection[str]) -> frozenset[str]:
    """``status`` (one or several) as a set, every one a status of ``kind``."""
    __tracebackhide__ = True
    wanted = frozenset({status} if isinstance(status, str) else status)
    known, _ = statuses_of(kind)
    for name in sorted(wanted - known):
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise UnknownStatus(
            f"a {kind} is never {name!r}{hint}: its statuses are {', '.join(sorted(known))}"
        )
    if not wanted:
        raise UnknownStatus(f"name at least one {kind} status to wait for")
    return wanted
