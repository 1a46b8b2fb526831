"""The model's rules: each a named, registered check whose verdicts the model hands the run.

Why rules are checks: a report line, a JUnit case and a requirement id's coverage are all keyed
by a check's name, and a rule of the model is judged the same way whoever sent the exchange that
showed it (a script, the fuzz, another rule's confirmation). A rule declares its ``edge``: the
condition under which it can fail at all for the bound it states (a rate with more creates than
its limit inside one window, a page size above the maximum on a list longer than the maximum).
A verdict says whether it reached that edge; a rule never judged at its edge is ``partly``
checked, and the report says what was missing.

The rules' words (requirement ids, description, edge) are data, in ``rules.toml`` beside this
module: one table a reader can take in at once, and the module that judges a rule names it.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from harness.conformance.checks import CHECKS, Check
from harness.conformance.target import Exchange

__all__ = ["RULES", "Verdict", "model_rule", "rule_table"]

#: The model's rules by name, in registration order.
RULES: dict[str, Check] = {}


@functools.cache
def rule_table() -> dict[str, dict[str, Any]]:
    """Every model rule's row in ``rules.toml``, by name."""
    text = resources.files(__package__).joinpath("rules.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def model_rule(name: str) -> str:
    """Register the model rule ``name`` (a check of kind ``model``) from its row in
    ``rules.toml``; returns the name."""
    row = rule_table().get(name)
    if row is None:
        raise KeyError(f"the model rule {name!r} has no row in rules.toml")
    check = Check(
        name, tuple(row["requirements"]), "model", row["description"], edge=row.get("edge")
    )
    existing = CHECKS.get(name)
    if existing is not None and existing != check:
        raise ValueError(f"a conformance check named {name!r} is already registered")
    CHECKS[name] = check
    RULES[name] = check
    return name


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judgement of one rule: passed (``failure`` is ``None``) or failed, on ``exchange``;
    ``edge`` when it was judged where the rule can fail at its bound."""

    rule: str
    exchange: Exchange | None
    failure: str | None = None
    edge: bool = True

    @classmethod
    def passed(cls, rule: str, exchange: Exchange | None, *, edge: bool = True) -> Verdict:
        return cls(rule, exchange, None, edge)

    @classmethod
    def failed(cls, rule: str, exchange: Exchange | None, message: str) -> Verdict:
        return cls(rule, exchange, message, True)
