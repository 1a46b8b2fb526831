"""The avatar lifecycle as data (AV-ST-1).

The seed's avatar state table, declared once: the service asks ``next_status`` for every change
and the tests read ``TRANSITIONS`` to check that every observed change is a row of it. ``ready``
and ``failed`` are final: a failed avatar is never retried, the customer uploads a new portrait.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal

from sim.transitions import row_of

__all__ = [
    "AVATAR_STATUSES",
    "FINAL_STATUSES",
    "TRANSITIONS",
    "AvatarStatus",
    "AvatarTrigger",
    "next_status",
]

AvatarStatus = Literal["processing", "ready", "failed"]
AvatarTrigger = Literal["upload", "fitting_succeeded", "fitting_failed"]

AVATAR_STATUSES: tuple[AvatarStatus, ...] = ("processing", "ready", "failed")

#: (current status or ``None`` before the avatar exists, trigger) -> next status.
TRANSITIONS: Mapping[tuple[AvatarStatus | None, AvatarTrigger], AvatarStatus] = MappingProxyType(
    {
        (None, "upload"): "processing",
        ("processing", "fitting_succeeded"): "ready",
        ("processing", "fitting_failed"): "failed",
    }
)

FINAL_STATUSES: frozenset[AvatarStatus] = frozenset({"ready", "failed"})


def next_status(current: AvatarStatus | None, trigger: AvatarTrigger) -> AvatarStatus:
    """The status ``trigger`` leads to from ``current``; a missing row is a bug, not a refusal."""
    return row_of(TRANSITIONS, current, trigger, "avatar")
