"""What a served simulator starts with: organizations, their API keys, an asset each and the
admin token.

Why: an SDK developer who runs ``avatar-sim serve`` needs working credentials at once, of every
kind the contract distinguishes (an unrestricted key, each run scope alone, a revoked key), in
at least two organizations (one on the enterprise plan, which alone may delete runs) so tenant
isolation can be tried, and an asset to list and download at once: each organization has one
finished run of a model whose output is an asset. The keys document is printed and, with
``--keys-out``, written as JSON for a parent process (a test, a CI job) to read once the server
is listening.

Keys come from the platform's seeded id stream, so the same ``--seed`` gives the same keys. The
admin token is real randomness (``secrets``): the admin API can rewrite the clock, accounts and
faults, and a token derivable from a seed would be a foot-gun on any non-loopback bind.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.serve.console import CONSOLE_PATH

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = [
    "ADMIN_TOKEN_PREFIX",
    "ASSET_MODEL",
    "DEFAULT_ORGANIZATIONS",
    "KEY_KINDS",
    "SEEDING_SECONDS",
    "OrganizationAdmin",
    "format_keys",
    "keys_document",
    "new_admin_token",
    "organization_record",
    "seed_assets",
    "seed_organizations",
    "write_keys_file",
]

ADMIN_TOKEN_PREFIX = "simadmin_"

#: The kinds of key every seeded organization gets, in the order they are printed.
KEY_KINDS: tuple[str, ...] = ("unrestricted", "runs_read", "runs_write", "revoked")

#: (name, plan key) of the organizations a served simulator starts with.
DEFAULT_ORGANIZATIONS: tuple[tuple[str, str], ...] = (
    ("Enterprise Org", "enterprise"),
    ("Starter Org", "starter"),
)


#: The model each seeded organization runs once, so that it starts with an asset (its speech) to
#: list and download: a client or a conformance run meets assets without making one first.
ASSET_MODEL = "sim/speech"
ASSET_TEXT = "Welcome to avatar-sim."

#: Simulated seconds the seeded runs get before serving begins: longer than the speech model's
#: capped duration, and one whole rate window, so every run-create limit is fresh again.
SEEDING_SECONDS = 60.0


class OrganizationAdmin(Protocol):
    """The part of ``platform.admin`` seeding needs."""

    def create_organization(self, name: str, plan: str) -> dict[str, Any]:
        """Create an organization with its four keys: ``{"id", "plan", "keys": {...}}``."""
        ...


def new_admin_token() -> str:
    """A fresh, unguessable admin token for the ``/_sim/`` endpoints."""
    return ADMIN_TOKEN_PREFIX + secrets.token_urlsafe(24)


def seed_organizations(
    admin: OrganizationAdmin,
    organizations: Sequence[tuple[str, str]] = DEFAULT_ORGANIZATIONS,
) -> list[dict[str, Any]]:
    """Create each organization and return its ``{"id", "plan", "keys"}`` record."""
    return [
        organization_record(admin.create_organization(name, plan)) for name, plan in organizations
    ]


def seed_assets(platform: Platform, organizations: Sequence[dict[str, Any]]) -> list[str]:
    """Run ``ASSET_MODEL`` once with each organization's unrestricted key and move the clock on
    ``SEEDING_SECONDS``, so each has one finished run and its asset; return the run ids.

    Everything comes from the platform's seeded streams, so the same seed gives the same runs,
    assets and bytes. A run that has not finished by then is an error, never a silent gap."""
    callers = [
        platform.authenticate(f"Bearer {org['keys']['unrestricted']}") for org in organizations
    ]
    body = {"model_id": ASSET_MODEL, "body": {"input": {"text": ASSET_TEXT}}}

    def answer(operation: str, caller: Any, params: dict[str, Any]) -> dict[str, Any]:
        outcome = platform.call(operation, caller, params).body
        assert isinstance(outcome, dict)  # both operations answer JSON
        return outcome

    runs = [str(answer("createRun", caller, body)["id"]) for caller in callers]
    platform.advance(SEEDING_SECONDS)
    for caller, run_id in zip(callers, runs, strict=True):
        status = answer("retrieveRun", caller, {"run_id": run_id})["status"]
        if status != "succeeded":
            raise RuntimeError(f"the seeded run {run_id} is {status} after {SEEDING_SECONDS} s")
    return runs


def organization_record(created: dict[str, Any]) -> dict[str, Any]:
    """The keys document's entry for an organization the admin API created."""
    keys = created["keys"]
    missing = [kind for kind in KEY_KINDS if kind not in keys]
    if missing:
        raise ValueError(f"organization {created['id']} was created without keys {missing}")
    return {
        "id": created["id"],
        "plan": created["plan"],
        "keys": {kind: keys[kind] for kind in KEY_KINDS},
    }


def keys_document(
    admin_token: str, base_url: str, organizations: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """The JSON written by ``--keys-out``."""
    return {
        "admin_token": admin_token,
        "base_url": base_url,
        "console_url": f"{base_url}{CONSOLE_PATH}",
        "organizations": [dict(org) for org in organizations],
    }


def write_keys_file(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` atomically, so a process waiting for the file never reads half of it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)


def format_keys(document: dict[str, Any]) -> str:
    """The human-readable banner printed when the server is listening."""
    lines = [
        f"avatar-sim serving on {document['base_url']}",
        f"  admin token (for /_sim/): {document['admin_token']}",
        f"  console: {document['console_url']} (asks for the admin token)",
    ]
    for org in document["organizations"]:
        lines.append(f"  organization {org['id']} (plan {org['plan']})")
        for kind in KEY_KINDS:
            lines.append(f"    {kind:<13} {org['keys'][kind]}")
    return "\n".join(lines)
