"""Bearer-key authentication and scope checks.

A key is unrestricted or limited to ``runs:read`` / ``runs:write``. Run endpoints name the
scopes they need; for the other endpoints the spec is silent, so the reading decides whether a
run-scoped key may use them. Failures are 401 (missing, malformed, unknown, revoked) or 403
``api_key.scope_required``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ApiError
from .faults import FaultSet
from .readings import Reading
from .store import ApiKey, Org, Store


@dataclass(frozen=True)
class Principal:
    key: ApiKey
    org: Org


def _unauthorized(reading: Reading, code: str, message: str) -> ApiError:
    headers = {"WWW-Authenticate": 'Bearer realm="api"'} if reading.www_authenticate else {}
    return ApiError(401, code, message, headers=headers)


def authenticate(
    header: str | None,
    store: Store,
    reading: Reading,
    faults: FaultSet,
    *,
    allow_revoked: bool = False,
) -> Principal:
    if not header:
        raise _unauthorized(reading, "api_key.missing", "An Authorization header is required.")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if faults.on("bearer_prefix_optional") and not token and scheme.startswith("sk_live_"):
        scheme, token = "Bearer", scheme
    scheme_ok = (
        scheme.lower() == "bearer" if reading.bearer_case_insensitive else scheme == "Bearer"
    )
    if not scheme_ok or not token.startswith("sk_live_") or " " in token:
        raise _unauthorized(
            reading, "api_key.malformed", "Use 'Authorization: Bearer sk_live_...'."
        )
    key = store.keys.get(token)
    if key is None:
        raise _unauthorized(reading, "api_key.invalid", "The API key is not recognized.")
    if key.revoked and not allow_revoked:
        raise _unauthorized(reading, "api_key.revoked", "The API key has been revoked.")
    return Principal(key, store.orgs[key.org_id])


def scope_error(faults: FaultSet, needed: str) -> ApiError:
    code = "forbidden" if faults.on("scope_error_code_generic") else "api_key.scope_required"
    return ApiError(403, code, f"This API key lacks the required scope: {needed}.")


def require_scopes(principal: Principal, faults: FaultSet, *scopes: str) -> None:
    """Run endpoints: the key must be unrestricted or hold every named scope."""
    key = principal.key
    if key.scopes is None:
        return
    missing = [s for s in scopes if s not in key.scopes]
    if missing:
        raise scope_error(faults, " and ".join(scopes))


def require_unrestricted(principal: Principal, faults: FaultSet) -> None:
    if principal.key.scopes is not None:
        raise scope_error(faults, "an unrestricted key")


def require_general(principal: Principal, reading: Reading, faults: FaultSet) -> None:
    """Sessions, avatars, usage and quota: scope policy by reading."""
    if reading.non_run_scope == "unrestricted":
        require_unrestricted(principal, faults)
