"""The one way the harness reaches an implementation, in process or by URL (``Target``).

``Target.url(base_url, credentials)`` or ``Target.in_process(platform, credentials)``; every
request through it is an ``Exchange``; ``Credentials`` name the keys by role.
"""

from __future__ import annotations

from harness.target.binding import UnknownTarget, target_of, url_client
from harness.target.exchange import Exchange, Observer
from harness.target.roles import ROLE_PLACEHOLDERS, Credentials
from harness.target.target import (
    InProcessTarget,
    Target,
    TargetStalled,
    TargetUnreachable,
    UrlTarget,
    bind,
)
from harness.target.transport import SyncASGITransport

__all__ = [
    "ROLE_PLACEHOLDERS",
    "Credentials",
    "Exchange",
    "InProcessTarget",
    "Observer",
    "SyncASGITransport",
    "Target",
    "TargetStalled",
    "TargetUnreachable",
    "UnknownTarget",
    "UrlTarget",
    "bind",
    "target_of",
    "url_client",
]
