"""Which contract rules a conformance run checked, and why the others cannot be checked.

Every kind-C requirement of ``spec/requirements.yaml`` is either carried by at least one
registered check or listed in ``NOT_CHECKABLE`` with the reason no request to a deployment can
show it. A run counts an id as checked only when every check carrying it judged the condition
it names at its edge (it passed or failed there) and none was left incomplete: an id half
checked is ``partly`` checked, with what was missing. Each checked id names the exchange that
showed it.
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
        partly = sum(1 for why in self.unchecked.values() if why.startswith("partly"))
        beyond = sum(1 for why in self.unchecked.values() if "beyond this run's time" in why)
        extra = f", {partly} partly" if partly else ""
        extra += f" ({beyond} beyond this run's time)" if beyond else ""
        return f"checked: {len(self.checked)} of {self.total} contract ids{extra}"


def coverage_of(results: Iterable[CheckResult]) -> Coverage:
    """Coverage from the run's check results: an id is checked only when every check carrying
    it that could run judged it at its edge (a bound with more items than the bound, a rate with
    more creates than its limit inside one window, a replay looked at for a second resource);
    otherwise it is ``partly`` checked, with what was missing, or incomplete."""
    ids = contract_ids()
    exercised: dict[str, list[str]] = {}
    partly: dict[str, list[str]] = {}
    incomplete: dict[str, list[str]] = {}
    elsewhere: dict[str, list[str]] = {}
    for result in results:
        for requirement in result.requirements:
            reason = f"{result.name}: {result.skip_reason}" + (
                f" ({result.flag})" if result.flag else ""
            )
            if result.outcome in ("passed", "failed"):
                shown = f"{result.name}: {result.proof.line()}" if result.proof else result.name
                exercised.setdefault(requirement, []).append(shown)
            elif result.outcome in ("partly", "unreached", "beyond_time"):
                partly.setdefault(requirement, []).append(reason)
            elif result.outcome == "incomplete":
                incomplete.setdefault(requirement, []).append(reason)
            else:
                elsewhere.setdefault(requirement, []).append(reason)
    unchecked: dict[str, str] = {}
    for requirement in ids:
        if requirement in incomplete:
            unchecked[requirement] = "incomplete: " + "; ".join(incomplete[requirement])
        elif requirement in partly:
            unchecked[requirement] = "partly: " + "; ".join(partly[requirement])
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
