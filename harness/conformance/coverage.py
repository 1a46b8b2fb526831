"""Which contract rules a conformance run checked, and why the others cannot be checked.

Every kind-C requirement of ``spec/requirements.yaml`` is either carried by at least one
registered check or listed in ``NOT_CHECKABLE`` with the reason no request to a deployment can
show it. A run counts an id as checked only when a check carrying it exercised the condition it
names (it passed or failed) and no check carrying it was left incomplete: an id half checked is
not checked. Each checked id names the exchange that showed it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.requirements import Kind, load_catalog

if TYPE_CHECKING:
    from harness.conformance.report import CheckResult

__all__ = ["NOT_CHECKABLE", "Coverage", "contract_ids", "coverage_of"]

#: Contract rules no HTTP conversation with a deployment can show, and why.
NOT_CHECKABLE: Mapping[str, str] = {
    "RES-SESS-5": "the lag of usage behind the worker's heartbeats needs the heartbeat times and "
    "the usage event, neither of which the API shows",
    "RES-RUN-2": "whether the platform could honestly give a remaining time is internal to it",
    "EP-RUN-4": "needs an account whose credits are exhausted, which the harness cannot bring "
    "about on a deployment",
    "EV-1": "session events are delivered by webhooks, whose registration the contract does not "
    "show; their effects (started_at, first_frame_at, ended) are checked",
    "EV-2": "a rule for clients: the harness itself tolerates unknown event types and enum "
    "values (its tests run it against a deployment that uses other values)",
    "LIM-2": "the organization cap is tuned per organization by support, so a deployment's value "
    "is unknown, and checking the default needs a fresh organization with six keys",
    "LIM-8": "the signup grant shows only on a newly created account",
    "VER-1": "a rule for how the contract evolves between versions (`avatar-sim spec diff`), not "
    "for a running deployment",
    "VER-2": "a property of the contract document (which operations are in the initial "
    "release), not of a running deployment",
}


def contract_ids() -> tuple[str, ...]:
    """Every kind-C requirement id, in catalog order."""
    return tuple(r.id for r in load_catalog() if r.kind == Kind.CONTRACT)


@dataclass(frozen=True, slots=True)
class Coverage:
    """The contract ids a run checked (each with the exchange that showed it), and every other
    one with its reason."""

    checked: tuple[str, ...]
    unchecked: Mapping[str, str]
    total: int
    proofs: Mapping[str, str] = field(default_factory=dict)

    def line(self) -> str:
        return f"checked: {len(self.checked)} of {self.total} contract ids"


def coverage_of(results: Iterable[CheckResult]) -> Coverage:
    """Coverage from the run's check results."""
    ids = contract_ids()
    exercised: dict[str, list[str]] = {}
    incomplete: dict[str, list[str]] = {}
    elsewhere: dict[str, list[str]] = {}
    for result in results:
        for requirement in result.requirements:
            if result.outcome in ("passed", "failed"):
                shown = f"{result.name}: {result.proof.line()}" if result.proof else result.name
                exercised.setdefault(requirement, []).append(shown)
            else:
                reason = f"{result.name}: {result.skip_reason}" + (
                    f" ({result.flag})" if result.flag else ""
                )
                target = incomplete if result.outcome == "incomplete" else elsewhere
                target.setdefault(requirement, []).append(reason)
    unchecked: dict[str, str] = {}
    for requirement in ids:
        if requirement in incomplete:
            unchecked[requirement] = "incomplete: " + "; ".join(incomplete[requirement])
        elif requirement in exercised:
            continue
        elif requirement in NOT_CHECKABLE:
            unchecked[requirement] = (
                "not checkable against a deployment: " + NOT_CHECKABLE[requirement]
            )
        elif requirement in elsewhere:
            unchecked[requirement] = "not applicable here: " + "; ".join(elsewhere[requirement])
        else:
            unchecked[requirement] = "no check of this run carries it"
    checked = tuple(r for r in ids if r not in unchecked)
    proofs = {r: exercised[r][0] for r in checked}
    return Coverage(checked=checked, unchecked=unchecked, total=len(ids), proofs=proofs)
