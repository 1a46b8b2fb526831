"""The outcome of a conformance run and its three renderings: terminal, JUnit XML, JSON/Markdown.

Why one immutable record rendered three ways: the terminal summary, the CI's JUnit file and the
archived report must never disagree. Every failure names its check and the requirement ids the
check proves, and carries a ``curl`` that sends the same request again with each secret replaced
by a shell variable (``$API_KEY`` ...). A body a shell argument cannot carry exactly (binary,
multipart, long) is written beside the report under ``conformance-bodies/`` and the ``curl``
reads it with ``--data-binary @conformance-bodies/NNN.bin``: run it from the report's directory.
Every rendering also says how many contract ids the run checked, and why each other one was not.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from harness.conformance.coverage import Coverage
from harness.conformance.target import Exchange

__all__ = ["BODIES_DIR", "CheckResult", "FailureRecord", "Outcome", "Proof", "Report"]

#: Where request bodies of failures are written, relative to the report's directory.
BODIES_DIR = "conformance-bodies"

#: ``incomplete``: the check could not exercise its rule and something the user can give would
#: let it (the flag says what); ``not_applicable``: nothing could, against this target;
#: ``beyond_time``: only a longer run reaches it (the 24-hour window), which changes no exit
#: code. A model rule is ``partly`` when judged but never at its edge, ``unreached`` when no
#: exchange came under it.
Outcome = Literal[
    "passed", "failed", "incomplete", "not_applicable", "beyond_time", "partly", "unreached"
]

#: Exit codes of a run (those of every ``avatar-sim`` command).
EXIT_CONFORMS, EXIT_FAILED, EXIT_UNREACHABLE, EXIT_INCOMPLETE = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class FailureRecord:
    message: str
    operation: str
    curl: str | None


@dataclass(frozen=True, slots=True)
class Proof:
    """The exchange that showed a check's rule: what was asked and what came back."""

    request: str  # "POST /v1/sessions"
    status: int
    curl: str

    @classmethod
    def of(cls, exchange: Exchange, secrets: Mapping[str, str]) -> Proof:
        return cls(f"{exchange.method} {exchange.path}", exchange.status, exchange.curl(secrets))

    def line(self) -> str:
        return f"{self.request} -> {self.status}"


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    kind: str
    requirements: tuple[str, ...]
    description: str
    outcome: Outcome
    applied: int
    skip_reason: str | None
    failures: tuple[FailureRecord, ...]
    flag: str | None = None
    proof: Proof | None = None


@dataclass(frozen=True, slots=True)
class Report:
    base_url: str
    seed: int
    max_examples: int
    cases: int
    results: tuple[CheckResult, ...]
    errors: tuple[str, ...] = ()
    coverage: Coverage = field(default_factory=lambda: Coverage((), {}, 0))
    bodies: Mapping[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0
    aborted: str | None = None

    def count(self, outcome: Outcome) -> int:
        return sum(1 for result in self.results if result.outcome == outcome)

    def tally(self) -> str:
        """How many checks ended each way (outcomes none ended omitted, but the first four)."""
        parts = []
        for outcome in get_args(Outcome):
            count = self.count(outcome)
            if count or outcome in ("passed", "failed", "incomplete", "not_applicable"):
                parts.append(f"{count} {outcome.replace('_', ' ')}")
        return ", ".join(parts)

    @property
    def exit_code(self) -> int:
        """1 when a check failed, else 2 when the target stopped answering, else 3 when a check
        was left incomplete, else 0."""
        return self.exit(allow_incomplete=False)

    def exit(self, *, allow_incomplete: bool) -> int:
        """The exit code; ``allow_incomplete`` (``--allow-incomplete``) turns 3 into 0."""
        if self.count("failed"):
            return EXIT_FAILED
        if self.aborted is not None:
            return EXIT_UNREACHABLE
        if self.count("incomplete") and not allow_incomplete:
            return EXIT_INCOMPLETE
        return EXIT_CONFORMS

    def result(self, name: str) -> CheckResult:
        return next(result for result in self.results if result.name == name)

    def failed_names(self) -> list[str]:
        return [result.name for result in self.results if result.outcome == "failed"]

    def names(self, outcome: Outcome) -> list[str]:
        return [result.name for result in self.results if result.outcome == outcome]

    def flags(self) -> dict[str, list[str]]:
        """Each flag that would let an incomplete check run, with the checks it would."""
        needed: dict[str, list[str]] = {}
        for r in self.results:
            if r.outcome == "incomplete":
                needed.setdefault(r.flag or "(see the reason)", []).append(r.name)
        return needed

    def verdict(self) -> str:
        """One line: what the run's exit code means, and why."""
        code = self.exit_code
        if code == EXIT_FAILED:
            return f"NOT CONFORMING: {self.count('failed')} check(s) failed"
        if code == EXIT_UNREACHABLE:
            return f"STOPPED: {self.aborted}"
        if code == EXIT_INCOMPLETE:
            flags = [f for f in self.flags() if not f.startswith("(")]
            return (
                f"INCOMPLETE: nothing failed, but {self.count('incomplete')} check(s) could not "
                "run"
                + ("; to run them: " + "; ".join(flags) if flags else "")
                + " (--allow-incomplete accepts this)"
            )
        beyond = self.names("beyond_time")
        return "CONFORMING: every check that could run against this target passed" + (
            f" ({', '.join(beyond)}: beyond this run's time)" if beyond else ""
        )

    def summary(self) -> str:
        """The terminal summary: one line per check, then each failure with its curl."""
        width = max((len(r.name) for r in self.results), default=10)
        lines = [
            f"conformance of {self.base_url} against the contract profile "
            f"(seed {self.seed}, {self.max_examples} examples per operation and mode, "
            f"{self.cases} fuzzed cases)",
            "",
        ]
        for r in self.results:
            if r.outcome in _NOT_RUN:
                detail = (r.skip_reason or "") + (f" [{r.flag}]" if r.flag else "")
            else:
                detail = f"{r.applied} applied" + (
                    f"; shown by {r.proof.line()}" if r.proof else ""
                )
                if r.outcome == "partly":
                    detail += f"; {r.skip_reason}"
            label = _LABELS.get(r.outcome, r.outcome.upper())
            lines.append(
                f"  {label:<10} {r.name:<{width}}  [{', '.join(r.requirements)}]  {detail}"
            )
        for r in self.results:
            for failure in r.failures:
                lines += ["", f"FAILED {r.name} [{', '.join(r.requirements)}]: {failure.message}"]
                if failure.curl:
                    lines.append(f"  reproduce: {failure.curl}")
        for error in self.errors:
            lines += ["", f"note: {error}"]
        if self.bodies:
            lines += ["", f"request bodies of the reproductions: {BODIES_DIR}/ (run from there)"]
        lines += ["", self.coverage.line()]
        lines += [f"  unchecked {rid}: {why}" for rid, why in self.coverage.unchecked.items()]
        needed = self.flags()
        if needed:
            lines += ["", "to check what was left incomplete:"]
            lines += [f"  {flag}: {', '.join(names)}" for flag, names in needed.items()]
        lines += ["", f"{self.tally()}, in {_minutes(self.seconds)}", self.verdict()]
        return "\n".join(lines)

    def _coverage_document(self) -> dict[str, Any]:
        return {
            "checked": len(self.coverage.checked),
            "total": self.coverage.total,
            "checked_ids": list(self.coverage.checked),
            "unchecked": dict(self.coverage.unchecked),
            "proofs": dict(self.coverage.proofs),
        }

    def to_json(self) -> str:
        document: dict[str, Any] = asdict(self)
        document.pop("bodies")
        document["coverage"] = self._coverage_document()
        for outcome in get_args(Outcome):
            document[outcome] = self.count(outcome)
        document["exit_code"] = self.exit_code
        document["verdict"] = self.verdict()
        document["flags"] = self.flags()
        return json.dumps(document, indent=2) + "\n"

    def to_markdown(self) -> str:
        lines = [
            f"# Conformance of `{self.base_url}`",
            "",
            f"**{self.verdict()}**",
            "",
            f"Seed {self.seed}, {self.max_examples} examples per operation and mode, "
            f"{self.cases} fuzzed cases, {_minutes(self.seconds)}: **{self.tally()}**; "
            f"{self.coverage.line()}.",
            "",
            "| check | requirements | outcome | detail |",
            "|---|---|---|---|",
        ]
        for r in self.results:
            detail = r.skip_reason or f"{r.applied} applied"
            if r.flag:
                detail += f" (`{r.flag}`)"
            if r.proof is not None:
                detail += f"; shown by `{r.proof.line()}`"
            lines.append(f"| `{r.name}` | {', '.join(r.requirements)} | {r.outcome} | {detail} |")
        for r in self.results:
            for failure in r.failures:
                lines += ["", f"## `{r.name}` failed", "", failure.message]
                if failure.curl:
                    lines += ["", "```sh", failure.curl, "```"]
        lines += ["", "## Contract ids checked, and the exchange that showed each", ""]
        lines += [
            f"- `{rid}`: {self.coverage.proofs.get(rid, '')}" for rid in self.coverage.checked
        ]
        lines += ["", "## Contract ids not checked", ""]
        lines += [f"- `{rid}`: {why}" for rid, why in self.coverage.unchecked.items()]
        return "\n".join(lines) + "\n"

    def to_junit(self) -> str:
        """JUnit XML: one test case per check, named by the check, its ids as a property; a
        check that could not run is a skipped case whose message says why."""
        not_run = sum(1 for r in self.results if r.outcome in _NOT_RUN)
        suite = ET.Element(
            "testsuite",
            name="avatar-sim conformance",
            tests=str(len(self.results)),
            failures=str(self.count("failed")),
            skipped=str(not_run),
            errors="0",
            time=f"{self.seconds:.1f}",
        )
        suite_properties = ET.SubElement(suite, "properties")
        ET.SubElement(suite_properties, "property", name="coverage", value=self.coverage.line())
        ET.SubElement(suite_properties, "property", name="verdict", value=self.verdict())
        for rid, why in self.coverage.unchecked.items():
            ET.SubElement(suite_properties, "property", name=f"unchecked {rid}", value=why)
        for r in self.results:
            case = ET.SubElement(suite, "testcase", classname=f"conformance.{r.kind}", name=r.name)
            properties = ET.SubElement(case, "properties")
            ET.SubElement(
                properties, "property", name="requirements", value=" ".join(r.requirements)
            )
            if r.outcome == "partly":
                ET.SubElement(properties, "property", name="partly", value=r.skip_reason or "")
            if r.outcome in _NOT_RUN:
                message = f"{r.outcome}: {r.skip_reason or ''}" + (f" ({r.flag})" if r.flag else "")
                ET.SubElement(case, "skipped", message=message)
            elif r.outcome == "failed":
                first = r.failures[0]
                failure = ET.SubElement(case, "failure", message=first.message[:500])
                failure.text = "\n\n".join(
                    f.message + (f"\nreproduce: {f.curl}" if f.curl else "") for f in r.failures
                )
        return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"

    def write(self, path: str) -> None:
        """``path`` ending in ``.md`` gets Markdown, anything else JSON; the failures' request
        bodies go beside it."""
        text = self.to_markdown() if path.endswith(".md") else self.to_json()
        Path(path).write_text(text, encoding="utf-8")
        self.write_bodies(Path(path).resolve().parent)

    def write_bodies(self, directory: Path) -> list[Path]:
        """Write each failure's request body file under ``directory``; the paths written."""
        written = []
        for name, content in self.bodies.items():
            target = directory / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.append(target)
        return written


#: Outcomes of a check that did not judge its rule (a skipped case in JUnit).
_NOT_RUN = ("incomplete", "not_applicable", "beyond_time", "unreached")
_LABELS = {"not_applicable": "N/A", "beyond_time": "BEYOND", "unreached": "UNREACHED"}


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{seconds:.1f} s"
