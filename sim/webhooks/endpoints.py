"""Webhook endpoints: where an organization wants its events, and the secret they are signed with.

An endpoint belongs to one organization and only ever receives that organization's events
(AUTH-7). It asks for every event type (``event_types is None``) or a list of them; a list entry
is an exact type (``avatar.ready``) or a family (``session.*``), so customers can follow new
types of a family without re-registering (new types may appear at any time, VER-1). The secret
is ``whsec_`` + base64 of 24 random bytes, the format the Standard Webhooks libraries read.
"""

from __future__ import annotations

import base64
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sim.clock import Clock
from sim.errors import Unprocessable

__all__ = ["SECRET_PREFIX", "Endpoint", "new_secret", "validate_event_types", "validate_url"]

SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 24
_EVENT_PATTERN = re.compile(r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$")


@dataclass(frozen=True, slots=True)
class Endpoint:
    id: str
    org_id: str
    url: str
    event_types: tuple[str, ...] | None  # None: every event type
    secret: str
    created_at: float

    def wants(self, event_type: str) -> bool:
        if self.event_types is None:
            return True
        for pattern in self.event_types:
            if pattern == "*" or pattern == event_type:
                return True
            if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
                return True
        return False

    def to_resource(self, clock: Clock) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "webhook_endpoint",
            "url": self.url,
            "event_types": list(self.event_types) if self.event_types is not None else None,
            "secret": self.secret,
            "created_at": clock.timestamp(self.created_at),
        }


def new_secret(rng: random.Random) -> str:
    return SECRET_PREFIX + base64.b64encode(rng.randbytes(_SECRET_BYTES)).decode("ascii")


def validate_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Unprocessable(
            "validation.format", "url must be an absolute http(s) URL.", param="url"
        )
    return url


def validate_event_types(event_types: Sequence[str] | None) -> tuple[str, ...] | None:
    """``None`` (everything) or a non-empty list of types and ``family.*`` patterns."""
    if event_types is None:
        return None
    if isinstance(event_types, str) or not event_types:
        raise Unprocessable(
            "validation.type", "event_types must be a non-empty list or null.", param="event_types"
        )
    for index, event_type in enumerate(event_types):
        if not isinstance(event_type, str) or not _EVENT_PATTERN.match(event_type):
            raise Unprocessable(
                "validation.format",
                "Each event type is like `avatar.ready`, `session.*` or `*`.",
                param=f"event_types.{index}",
            )
    return tuple(dict.fromkeys(event_types))  # keep the order, drop repeats
