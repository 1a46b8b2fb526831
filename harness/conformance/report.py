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
from typing import Any, Literal

from harness.conformance.coverage import Coverage

__all__ = ["BODIES_DIR", "CheckResult", "FailureRecord", "Outcome", "Report"]

#: Where request bodies of failures are written, relative to the report's directory.
BODIES_DIR = "conformance-bodies"

Outcome = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True, slots=True)
class FailureRecord:
    message: str
    operation: str
    curl: str | None


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

    def count(self, outcome: Outcome) -> int:
        return sum(1 for result in self.results if result.outcome == outcome)

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, 1 when a check failed."""
        return 1 if self.count("failed") else 0

    def result(self, name: str) -> CheckResult:
        return next(result for result in self.results if result.name == name)

    def failed_names(self) -> list[str]:
        return [result.name for result in self.results if result.outcome == "failed"]

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
            detail = r.skip_reason if r.outcome == "skipped" else f"{r.applied} applied"
            lines.append(
                f"  {r.outcome.upper():<7} {r.name:<{width}}  [{', '.join(r.requirements)}]  "
                f"{detail}"
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
        lines += [
            "",
            f"{self.count('passed')} passed, {self.count('failed')} failed, "
            f"{self.count('skipped')} skipped",
        ]
        return "\n".join(lines)

    def _coverage_document(self) -> dict[str, Any]:
        return {
            "checked": len(self.coverage.checked),
            "total": self.coverage.total,
            "checked_ids": list(self.coverage.checked),
            "unchecked": dict(self.coverage.unchecked),
        }

    def to_json(self) -> str:
        document: dict[str, Any] = asdict(self)
        document.pop("bodies")
        document["coverage"] = self._coverage_document()
        document["passed"] = self.count("passed")
        document["failed"] = self.count("failed")
        document["skipped"] = self.count("skipped")
        return json.dumps(document, indent=2) + "\n"

    def to_markdown(self) -> str:
        lines = [
            f"# Conformance of `{self.base_url}`",
            "",
            f"Seed {self.seed}, {self.max_examples} examples per operation and mode, "
            f"{self.cases} fuzzed cases: **{self.count('passed')} passed, "
            f"{self.count('failed')} failed, {self.count('skipped')} skipped**; "
            f"{self.coverage.line()}.",
            "",
            "| check | requirements | outcome | detail |",
            "|---|---|---|---|",
        ]
        for r in self.results:
            detail = r.skip_reason or f"{r.applied} applied"
            lines.append(f"| `{r.name}` | {', '.join(r.requirements)} | {r.outcome} | {detail} |")
        for r in self.results:
            for failure in r.failures:
                lines += ["", f"## `{r.name}` failed", "", failure.message]
                if failure.curl:
                    lines += ["", "```sh", failure.curl, "```"]
        lines += ["", "## Contract ids not checked", ""]
        lines += [f"- `{rid}`: {why}" for rid, why in self.coverage.unchecked.items()]
        return "\n".join(lines) + "\n"

    def to_junit(self) -> str:
        """JUnit XML: one test case per check, named by the check, its ids as a property."""
        suite = ET.Element(
            "testsuite",
            name="avatar-sim conformance",
            tests=str(len(self.results)),
            failures=str(self.count("failed")),
            skipped=str(self.count("skipped")),
            errors="0",
        )
        suite_properties = ET.SubElement(suite, "properties")
        ET.SubElement(suite_properties, "property", name="coverage", value=self.coverage.line())
        for rid, why in self.coverage.unchecked.items():
            ET.SubElement(suite_properties, "property", name=f"unchecked {rid}", value=why)
        for r in self.results:
            case = ET.SubElement(suite, "testcase", classname=f"conformance.{r.kind}", name=r.name)
            properties = ET.SubElement(case, "properties")
            ET.SubElement(
                properties, "property", name="requirements", value=" ".join(r.requirements)
            )
            if r.outcome == "skipped":
                ET.SubElement(case, "skipped", message=r.skip_reason or "")
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
