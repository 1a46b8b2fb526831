"""Avatars: the stock catalog, portrait checks, fitting and listing (AV-ST-1, RES-AV-*, EP-AV-*).

``AvatarService`` is the entry point; the other modules are its parts, each one concept: the
lifecycle table, the record and its rendering, the stock catalog, the portrait check.
"""

from __future__ import annotations

from sim.avatars.catalog import STOCK_AVATARS, STOCK_PREFIX, stock_avatar
from sim.avatars.images import ImageFormat, PortraitInfo, check_portrait
from sim.avatars.lifecycle import (
    AVATAR_STATUSES,
    FINAL_STATUSES,
    TRANSITIONS,
    AvatarStatus,
    AvatarTrigger,
    next_status,
)
from sim.avatars.records import Avatar, RuntimeType
from sim.avatars.service import FAILURE_REASONS, SCOPES, AvatarScope, AvatarService

__all__ = [
    "AVATAR_STATUSES",
    "FAILURE_REASONS",
    "FINAL_STATUSES",
    "SCOPES",
    "STOCK_AVATARS",
    "STOCK_PREFIX",
    "TRANSITIONS",
    "Avatar",
    "AvatarScope",
    "AvatarService",
    "AvatarStatus",
    "AvatarTrigger",
    "ImageFormat",
    "PortraitInfo",
    "RuntimeType",
    "check_portrait",
    "next_status",
    "stock_avatar",
]
