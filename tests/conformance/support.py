"""Helpers for the conformance tests: an in-process simulator as a fully keyed ``Target``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.target import Credentials, Target
from sim.asgi import create_app
from sim.config import SimConfig
from sim.platform import Platform
from tests.conformance.edits import Edited, Edits

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


def configured(updates: Mapping[str, Any]) -> SimConfig:
    """The default configuration with ``updates`` applied: dotted paths, where a segment after
    ``plans`` names a plan by its key (``billing.plans.enterprise.concurrent_sessions``)."""
    document = SimConfig().model_dump()
    for dotted, value in updates.items():
        node: Any = document
        *parents, leaf = dotted.split(".")
        for segment in parents:
            if isinstance(node, list | tuple):
                node = next(item for item in node if item.get("key") == segment)
            else:
                node = node[segment]
        node[leaf] = value
    return SimConfig.model_validate(document)


def simulated(
    wrap: Callable[[Any, dict[str, str]], Any] | None = None,
    roles: tuple[str, ...] = OPTIONAL_ROLES,
    edits: Edits | None = None,
    api_key: Callable[[dict[str, str]], str] | None = None,
) -> Simulated:
    """A fresh platform with two organizations and its facade, behind ``edits`` (whose config
    changes it takes) or ``wrap(app, keys)``, and a Target holding the API key (``api_key(keys)``
    picks another) plus the credentials named by ``roles``. The first organization already has
    one finished speech run, so it has an asset to list and download."""
    platform = Platform.create(configured(edits.config) if edits is not None else SimConfig())
    keys = dict(platform.admin.create_organization("Acme", "enterprise")["keys"])
    other = dict(platform.admin.create_organization("Globex", "starter")["keys"])
    caller = platform.authenticate(f"Bearer {keys['unrestricted']}")
    platform.call(
        "createRun", caller, {"model_id": "sim/speech", "body": {"input": {"text": "hi"}}}
    )
    platform.advance(60)
    app: Any = create_app(platform, admin_token=ADMIN_TOKEN)
    if edits is not None:
        known = {**keys, "other_unrestricted": other["unrestricted"]}
        app = Edited(app, known, edits, lambda: platform.clock.now)
    if wrap is not None:
        app = wrap(app, keys)
    given = {
        "other_org": other["unrestricted"],
        "runs_read": keys["runs_read"],
        "runs_write": keys["runs_write"],
        "revoked": keys["revoked"],
        "admin": ADMIN_TOKEN,
    }
    api = api_key(keys) if api_key is not None else keys["unrestricted"]
    credentials = Credentials(api=api, **{role: given[role] for role in roles})
    return Simulated(
        platform, keys, other, credentials, Target.in_process(platform, credentials, app=app)
    )
