"""Helpers for the conformance tests: an in-process simulator as a fully keyed ``Target``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.conformance.target import Credentials, Target
from sim.asgi import create_app
from sim.platform import Platform

ADMIN_TOKEN = "simadmin_conformance-tests"

#: The credential roles a run may be given beyond the API key.
OPTIONAL_ROLES = ("other_org", "runs_read", "runs_write", "revoked", "admin")


@dataclass(frozen=True)
class Simulated:
    platform: Platform
    keys: dict[str, str]
    other_keys: dict[str, str]
    credentials: Credentials
    target: Target


def simulated(
    wrap: Callable[[Any, dict[str, str]], Any] | None = None,
    roles: tuple[str, ...] = OPTIONAL_ROLES,
) -> Simulated:
    """A fresh platform with two organizations, its facade (optionally wrapped by ``wrap(app,
    keys)``) and a Target holding the API key plus the credentials named by ``roles``."""
    platform = Platform.create()
    keys = dict(platform.admin.create_organization("Acme", "enterprise")["keys"])
    other = dict(platform.admin.create_organization("Globex", "starter")["keys"])
    app: Any = create_app(platform, admin_token=ADMIN_TOKEN)
    if wrap is not None:
        app = wrap(app, keys)
    given = {
        "other_org": other["unrestricted"],
        "runs_read": keys["runs_read"],
        "runs_write": keys["runs_write"],
        "revoked": keys["revoked"],
        "admin": ADMIN_TOKEN,
    }
    credentials = Credentials(api=keys["unrestricted"], **{role: given[role] for role in roles})
    return Simulated(platform, keys, other, credentials, Target.in_process(app, credentials))
