"""Organizations, keys, scopes and bearer authentication (AUTH-1 … AUTH-6, LIM-2)."""

from __future__ import annotations

import pytest

from sim.accounts import AccountRegistry
from sim.config import SimConfig
from sim.errors import AuthenticationFailed, PermissionDenied, Unprocessable
from sim.kernel import Kernel


def _registry() -> AccountRegistry:
    kernel = Kernel.create()
    return AccountRegistry(kernel.config, kernel.clock, kernel.ids)


@pytest.mark.req("AUTH-1")
def test_keys_belong_to_one_org_and_one_environment() -> None:
    reg = _registry()
    org = reg.create_organization("Acme", "pro")
    key = reg.create_key(org.id, environment="staging")
    assert key.secret.startswith("sk_live_") and key.environment == "staging"
    caller = reg.authenticate(f"Bearer {key.secret}")
    assert caller.org_id == org.id and caller.key.environment == "staging"
    # The key's non-secret handle (per-key limits, logs): the prefix and six characters, set
    # once per caller; callers of the same key are equal and share it.
    assert caller.key_id == key.secret[: len("sk_live_") + 6]
    again = reg.authenticate(f"Bearer {key.secret}")
    assert again == caller and again.key_id == caller.key_id and "sk_live" not in repr(caller)


@pytest.mark.req("AUTH-3", "AUTH-6")
@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "api_key.missing"),
        ("", "api_key.missing"),
        ("Basic abc", "api_key.malformed"),
        ("Bearer", "api_key.malformed"),
        ("Bearer not-a-key", "api_key.malformed"),
        ("Bearer sk_live_00000000000000000000000000000000", "api_key.invalid"),
        ("Bearer emb_01JABCDEFGHJKMNPQRSTVWXYZ0", "api_key.invalid"),
    ],
)
def test_bad_credentials_are_refused(header: str | None, code: str) -> None:
    with pytest.raises(AuthenticationFailed) as excinfo:
        _registry().authenticate(header)
    assert excinfo.value.code == code


@pytest.mark.req("AUTH-3")
def test_revoked_key_is_refused() -> None:
    reg = _registry()
    org = reg.create_organization("Acme")
    key = reg.create_key(org.id)
    reg.revoke_key(key.secret)
    with pytest.raises(AuthenticationFailed) as excinfo:
        reg.authenticate(f"Bearer {key.secret}")
    assert excinfo.value.code == "api_key.revoked"


@pytest.mark.req("AUTH-4", "AUTH-5")
def test_scopes() -> None:
    reg = _registry()
    org = reg.create_organization("Acme")
    read = reg.authenticate(
        f"Bearer {reg.create_key(org.id, scopes=frozenset({'runs:read'})).secret}"
    )
    full = reg.authenticate(f"Bearer {reg.create_key(org.id).secret}")
    read.require("runs:read")
    full.require("runs:read", "runs:write")
    full.require_unrestricted()
    with pytest.raises(PermissionDenied) as excinfo:
        read.require("runs:read", "runs:write")  # generating media needs both
    assert excinfo.value.code == "api_key.scope_required"
    with pytest.raises(PermissionDenied):
        read.require_unrestricted()


@pytest.mark.req("LIM-2")
def test_concurrency_override_is_bounded_by_the_ceiling() -> None:
    reg = _registry()
    org = reg.create_organization("Acme", "free")
    assert reg.concurrency_limit(org.id) == 5
    reg.set_concurrency_override(org.id, 20)
    assert reg.concurrency_limit(org.id) == 20
    with pytest.raises(Unprocessable):
        reg.set_concurrency_override(org.id, 21)


@pytest.mark.req("LIM-2")
def test_the_concurrency_limit_follows_every_change_of_plan_and_override() -> None:
    """The limit is kept between creates: each change of plan or override must show at once."""
    reg = _registry()
    org = reg.create_organization("Acme", "free")
    config = SimConfig()
    expected = {key: config.billing.plan(key).concurrent_sessions for key in ("free", "enterprise")}
    assert reg.concurrency_limit(org.id) == expected["free"]
    reg.set_plan(org.id, "enterprise")
    assert reg.concurrency_limit(org.id) == expected["enterprise"] != expected["free"]
    reg.set_concurrency_override(org.id, 3)
    assert reg.concurrency_limit(org.id) == 3
    reg.set_plan(org.id, "free")
    assert reg.concurrency_limit(org.id) == 3
    reg.set_concurrency_override(org.id, None)
    assert reg.concurrency_limit(org.id) == expected["free"]
