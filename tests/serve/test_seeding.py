"""Seeding a served simulator: organizations, keys, admin token, the keys file (SIM-8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.serve.seeding import (
    ADMIN_TOKEN_PREFIX,
    DEFAULT_ORGANIZATIONS,
    KEY_KINDS,
    format_keys,
    keys_document,
    new_admin_token,
    seed_organizations,
    write_keys_file,
)


class FakeAdmin:
    def __init__(self, drop: str | None = None) -> None:
        self.created: list[tuple[str, str]] = []
        self._drop = drop

    def create_organization(self, name: str, plan: str) -> dict[str, Any]:
        self.created.append((name, plan))
        n = len(self.created)
        keys = {kind: f"sk_live_{kind}{n}" for kind in (*KEY_KINDS, "extra")}
        if self._drop is not None:
            del keys[self._drop]
        return {"id": f"org_{n}", "plan": plan, "keys": keys, "name": name}


@pytest.mark.req("SIM-8")
def test_default_seed_has_an_enterprise_org_and_another_plan_each_with_four_keys() -> None:
    admin = FakeAdmin()
    orgs = seed_organizations(admin)
    assert admin.created == list(DEFAULT_ORGANIZATIONS)
    plans = [org["plan"] for org in orgs]
    assert "enterprise" in plans
    assert len(set(plans)) >= 2
    for org in orgs:
        assert set(org) == {"id", "plan", "keys"}
        assert list(org["keys"]) == list(KEY_KINDS)


@pytest.mark.req("SIM-8")
def test_an_organization_missing_a_key_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="revoked"):
        seed_organizations(FakeAdmin(drop="revoked"))


@pytest.mark.req("SIM-8")
def test_admin_tokens_are_fresh_and_prefixed() -> None:
    tokens = {new_admin_token() for _ in range(20)}
    assert len(tokens) == 20
    assert all(t.startswith(ADMIN_TOKEN_PREFIX) and len(t) > 30 for t in tokens)


@pytest.mark.req("SIM-8")
def test_keys_file_round_trips_and_leaves_no_partial_file(tmp_path: Path) -> None:
    orgs = seed_organizations(FakeAdmin())
    document = keys_document("simadmin_x", "http://127.0.0.1:9", orgs)
    target = tmp_path / "nested" / "keys.json"
    write_keys_file(target, document)
    assert json.loads(target.read_text(encoding="utf-8")) == document
    assert [p.name for p in target.parent.iterdir()] == ["keys.json"]
    banner = format_keys(document)
    assert "http://127.0.0.1:9" in banner
    assert "simadmin_x" in banner
    assert all(key in banner for org in orgs for key in org["keys"].values())
