"""The model's rules table (``rules.toml``) and the code that judges it agree: every row is a
rule some module registers, every rule proves requirement ids the project knows, and a name
with no row cannot be registered."""

from __future__ import annotations

import pytest

import harness.conformance.model as model
from harness.conformance.checks import CHECKS
from harness.conformance.model.rules import model_rule, rule_table
from harness.requirements import load_catalog

pytestmark = pytest.mark.req("HAR-11")


def test_every_row_is_a_registered_rule() -> None:
    assert set(rule_table()) == set(model.RULES)
    for name, check in model.RULES.items():
        assert CHECKS[name] is check
        assert check.kind == "model"
        assert check.edge, f"{name} states no edge, so no verdict can reach it"


def test_every_rule_proves_known_requirements() -> None:
    known = set(load_catalog().ids)
    for name, check in model.RULES.items():
        assert check.requirements, name
        assert set(check.requirements) <= known, (name, set(check.requirements) - known)


def test_a_rule_without_a_row_is_refused() -> None:
    with pytest.raises(KeyError, match=r"no row in rules\.toml"):
        model_rule("a_rule_nobody_wrote")
