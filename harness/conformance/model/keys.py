"""Who sent a request: the role of the key in its ``Authorization`` header, and what that key
may do by the seed.

Why roles and organizations: tenant isolation, scopes, caps and the rate limit are all rules
about a key and its organization. The run holds keys of two organizations: its own (the API key,
and the scoped and revoked keys, which belong to the API key's organization) and, given
``--other-org-key``, another one's. A header naming none of them is judged by its form: missing,
not ``Bearer <key>``, an ``emb_`` embed id, or an unknown key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.conformance.target import Credentials

__all__ = ["FABRICATED_KEY", "OTHER", "OWN", "Caller", "CallerKind", "KeyRing", "Org"]

#: A key of the seed's form that no deployment issued: the run made it up. Any other token the
#: run does not hold may be a real key (the simulator's admin API mints some), so it is not
#: judged.
FABRICATED_KEY = "sk_live_" + "0" * 32

Org = Literal["own", "other"]
OWN: Org = "own"
OTHER: Org = "other"

#: How a request's ``Authorization`` header reads: a key the run holds (``known``), the run's
#: revoked key, no header, a header that is not ``Bearer <token>``, an embed id, the key the run
#: made up (``unknown``), a token it does not hold (``stranger``: not judged), or a form the
#: seed does not settle (the scheme in another case, which HTTP calls the same scheme: not
#: judged).
CallerKind = Literal[
    "known", "revoked", "none", "malformed", "embed", "unknown", "stranger", "doubtful"
]

#: Each role's organization and scopes (``None``: unrestricted).
_ROLES: dict[str, tuple[Org, frozenset[str] | None]] = {
    "api": (OWN, None),
    "runs_read": (OWN, frozenset({"runs:read"})),
    "runs_write": (OWN, frozenset({"runs:write"})),
    "revoked": (OWN, None),
    "other_org": (OTHER, None),
}


@dataclass(frozen=True, slots=True)
class Caller:
    """The sender of one request."""

    kind: CallerKind
    role: str | None = None
    org: Org | None = None
    scopes: frozenset[str] | None = None

    @property
    def valid(self) -> bool:
        """A key the seed says works (not revoked)."""
        return self.kind == "known"

    @property
    def unrestricted(self) -> bool:
        return self.valid and self.scopes is None

    def has(self, scope: str) -> bool:
        return self.valid and (self.scopes is None or scope in self.scopes)


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The run's keys by their secret, and each role's organization and scopes."""

    by_secret: dict[str, str]
    roles: dict[str, tuple[Org, frozenset[str] | None]] = field(
        default_factory=lambda: dict(_ROLES)
    )

    @classmethod
    def of(cls, credentials: Credentials, extra: Mapping[str, Org] | None = None) -> KeyRing:
        """The credentials' keys by role, and ``extra`` unrestricted keys (secret to
        organization), each its own role (``key-1``, ``key-2``...)."""
        found: dict[str, str] = {}
        roles = dict(_ROLES)
        for role in _ROLES:
            secret = credentials.get(role)
            if secret:
                found[secret] = role
        for number, (secret, org) in enumerate((extra or {}).items(), start=1):
            if secret not in found:
                found[secret] = f"key-{number}"
                roles[f"key-{number}"] = (org, None)
        return cls(found, roles)

    def caller(self, authorization: str | None) -> Caller:
        """The caller an ``Authorization`` header names."""
        if authorization is None:
            return Caller("none")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and scheme != "Bearer" and token in self.by_secret:
            return Caller("doubtful")
        if scheme != "Bearer" or not token or token != token.strip() or " " in token:
            return Caller("malformed")
        role = self.by_secret.get(token)
        if role is None:
            if token.startswith("emb_"):
                return Caller("embed")
            if not token.startswith("sk_live_"):
                return Caller("malformed")  # not of the form every key has
            return Caller("unknown" if token == FABRICATED_KEY else "stranger")
        org, scopes = self.roles[role]
        return Caller("revoked" if role == "revoked" else "known", role, org, scopes)

    def org_of(self, role: str) -> Org:
        return self.roles[role][0]
