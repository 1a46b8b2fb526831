"""Organizations, API keys, scopes and embed ids (AUTH-1 … AUTH-7, GAP-AUTH-*).

An organization has a plan and an optional concurrency override (at most the configured ceiling).
A key belongs to one organization and one environment; it is unrestricted (``scopes is None``) or
limited to named scopes. ``authenticate`` turns an ``Authorization`` header into a ``Caller`` or
refuses it; every later lookup is scoped to ``caller.org_id``. Embed ids reach one avatar and
are never keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from sim.clock import Clock
from sim.columns import Column, Table
from sim.config import SimConfig
from sim.errors import AuthenticationFailed, NotFound, PermissionDenied, Unprocessable
from sim.ids import IdFactory

__all__ = [
    "ENVIRONMENTS",
    "KEY_ID_LENGTH",
    "KEY_PREFIX",
    "SCOPES",
    "AccountRegistry",
    "ApiKey",
    "Caller",
    "Embed",
    "Environment",
    "Organization",
    "Scope",
]

Environment = Literal["staging", "production"]
ENVIRONMENTS: tuple[Environment, ...] = get_args(Environment)
Scope = Literal["runs:read", "runs:write"]
SCOPES: tuple[Scope, ...] = get_args(Scope)
KEY_PREFIX = "sk_live_"
#: How much of a key its non-secret handle (``Caller.key_id``) shows: the prefix and six more.
KEY_ID_LENGTH = len(KEY_PREFIX) + 6
_BEARER = re.compile(r"^Bearer (\S+)$")
_KEY_SHAPE = re.compile(r"^sk_live_[0-9A-Za-z]{8,128}$")


@dataclass(frozen=True, slots=True)
class Organization:
    id: str
    name: str
    plan_key: str
    created_at: float
    concurrency_override: int | None = None


@dataclass(frozen=True, slots=True)
class ApiKey:
    secret: str
    org_id: str
    environment: Environment
    scopes: frozenset[Scope] | None  # None: unrestricted
    created_at: float
    revoked_at: float | None = None

    @property
    def unrestricted(self) -> bool:
        return self.scopes is None


@dataclass(frozen=True, slots=True)
class Embed:
    id: str
    org_id: str
    avatar_id: str


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated principal of one request."""

    org_id: str
    key: ApiKey = field(repr=False)
    #: A stable, non-secret handle of the key (for per-key limits and logs): a field set once,
    #: not a property that sliced the secret again for every create that asked.
    key_id: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_id", self.key.secret[:KEY_ID_LENGTH])

    def require(self, *scopes: Scope) -> None:
        """Refuse with 403 ``api_key.scope_required`` unless the key has every scope."""
        if self.key.scopes is None:
            return
        missing = [s for s in scopes if s not in self.key.scopes]
        if missing:
            raise PermissionDenied(
                "api_key.scope_required",
                f"This API key lacks the scope(s): {', '.join(missing)}.",
            )

    def require_unrestricted(self) -> None:
        """Sessions, avatars, usage and quota need an unrestricted key (GAP-AUTH-1)."""
        if self.key.scopes is not None:
            raise PermissionDenied(
                "api_key.scope_required", "This endpoint needs an unrestricted API key."
            )


class AccountRegistry:
    def __init__(self, config: SimConfig, clock: Clock, ids: IdFactory) -> None:
        self._config = config
        self._clock = clock
        self._ids = ids
        self._orgs: dict[str, Organization] = {}
        self._keys: dict[str, ApiKey] = {}
        self._embeds: dict[str, Embed] = {}
        self._limits: dict[str, int] = {}  # concurrency_limit's answers, dropped on a change

    # -- organizations -----------------------------------------------------------------------

    def create_organization(self, name: str, plan_key: str = "free") -> Organization:
        self._config.billing.plan(plan_key)  # KeyError for an unknown plan
        org = Organization(
            id=self._ids.new("organization"),
            name=name,
            plan_key=plan_key,
            created_at=self._clock.now,
        )
        self._orgs[org.id] = org
        return org

    def organization(self, org_id: str) -> Organization:
        try:
            return self._orgs[org_id]
        except KeyError:
            raise NotFound("organization.not_found", f"No organization {org_id}.") from None

    def organizations(self) -> list[Organization]:
        return list(self._orgs.values())

    def export(self) -> Table:
        """Every organization in creation order: ``org_id``, ``name``, ``plan`` (its plan's
        key; texts); ``created_at`` (time); ``concurrency_override`` (int, missing where it has
        none)."""
        orgs = list(self._orgs.values())
        overrides = {row: o.concurrency_override for row, o in enumerate(orgs)}
        return Table(
            len(orgs),
            {
                "org_id": Column("text", [o.id for o in orgs]),
                "name": Column("text", [o.name for o in orgs]),
                "plan": Column("text", [o.plan_key for o in orgs]),
                "created_at": Column("time", [o.created_at for o in orgs]),
                "concurrency_override": Column(
                    "int", {row: limit for row, limit in overrides.items() if limit is not None}
                ),
            },
        )

    def set_plan(self, org_id: str, plan_key: str) -> Organization:
        self._config.billing.plan(plan_key)
        org = replace(self.organization(org_id), plan_key=plan_key)
        self._orgs[org_id] = org
        self._limits.pop(org_id, None)
        return org

    def set_concurrency_override(self, org_id: str, limit: int | None) -> Organization:
        """Support's per-organization tuning, never above the ceiling (LIM-2)."""
        ceiling = self._config.limits.concurrent_sessions_per_org_ceiling
        if limit is not None and not 1 <= limit <= ceiling:
            raise Unprocessable(
                "validation.range",
                f"The concurrency override must be 1 to {ceiling}.",
                param="concurrency_override",
            )
        org = replace(self.organization(org_id), concurrency_override=limit)
        self._orgs[org_id] = org
        self._limits.pop(org_id, None)
        return org

    def concurrency_limit(self, org_id: str) -> int:
        """The organization's override, else its plan's cap (every create asks: the answer is
        kept until its plan or override changes)."""
        limit = self._limits.get(org_id)
        if limit is None:
            org = self.organization(org_id)
            limit = org.concurrency_override
            if limit is None:
                limit = self._config.billing.plan(org.plan_key).concurrent_sessions
            self._limits[org_id] = limit
        return limit

    # -- keys --------------------------------------------------------------------------------

    def create_key(
        self,
        org_id: str,
        *,
        environment: Environment = "production",
        scopes: frozenset[Scope] | None = None,
    ) -> ApiKey:
        self.organization(org_id)
        key = ApiKey(
            secret=self._ids.token(KEY_PREFIX),
            org_id=org_id,
            environment=environment,
            scopes=scopes,
            created_at=self._clock.now,
        )
        self._keys[key.secret] = key
        return key

    def revoke_key(self, secret: str) -> ApiKey:
        key = self._keys[secret]
        if key.revoked_at is None:
            key = replace(key, revoked_at=self._clock.now)
            self._keys[secret] = key
        return key

    def key(self, secret: str) -> ApiKey | None:
        """The key with this secret, revoked or not (``None``: no such key)."""
        return self._keys.get(secret)

    def keys(self, org_id: str) -> list[ApiKey]:
        return [k for k in self._keys.values() if k.org_id == org_id]

    def authenticate(self, authorization: str | None) -> Caller:
        """The caller behind an ``Authorization`` header, or 401 (AUTH-2, AUTH-3, AUTH-6)."""
        if authorization is None or not authorization.strip():
            raise AuthenticationFailed("api_key.missing", "Send `Authorization: Bearer <key>`.")
        match = _BEARER.match(authorization.strip())
        if match is None:
            raise AuthenticationFailed(
                "api_key.malformed", "The Authorization header must be `Bearer <key>`."
            )
        token = match.group(1)
        if token.startswith("emb_"):
            raise AuthenticationFailed(
                "api_key.invalid", "Embed ids carry no account access; use an API key."
            )
        if not _KEY_SHAPE.match(token):
            raise AuthenticationFailed("api_key.malformed", "API keys look like sk_live_...")
        key = self._keys.get(token)
        if key is None:
            raise AuthenticationFailed("api_key.invalid", "This API key is not valid.")
        if key.revoked_at is not None:
            raise AuthenticationFailed("api_key.revoked", "This API key has been revoked.")
        return Caller(org_id=key.org_id, key=key)

    # -- embeds ------------------------------------------------------------------------------

    def create_embed(self, org_id: str, avatar_id: str) -> Embed:
        embed = Embed(id=self._ids.new("embed"), org_id=org_id, avatar_id=avatar_id)
        self._embeds[embed.id] = embed
        return embed

    def embed(self, embed_id: str) -> Embed:
        try:
            return self._embeds[embed_id]
        except KeyError:
            raise NotFound("embed.not_found", f"No embed {embed_id}.") from None
