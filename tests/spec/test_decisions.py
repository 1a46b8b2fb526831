"""Every gap mark in the contract is decided in DECISIONS.md, and every decision is either used
by a mark or listed as having none (n/a)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.contract import gap_ids

ENTRY = re.compile(r"^\*\*(GAP-[A-Z]+-[0-9]+)\*\*", re.MULTILINE)
UNMARKED = re.compile(r"\*\*Entries without a mark in `openapi.yaml`\.\*\*(.*?)(?:\n\n|\Z)", re.S)


def decisions(spec_dir: Path) -> str:
    return (spec_dir / "DECISIONS.md").read_text(encoding="utf-8")


@pytest.mark.req("HAR-5", "VER-2")
def test_every_mark_has_a_decision(spec_dir: Path, spec_document: dict[str, Any]) -> None:
    entries = set(ENTRY.findall(decisions(spec_dir)))
    assert sorted(gap_ids(spec_document) - entries) == []


@pytest.mark.req("HAR-5")
def test_every_decision_is_used_or_noted_na(spec_dir: Path, spec_document: dict[str, Any]) -> None:
    text = decisions(spec_dir)
    entries = set(ENTRY.findall(text))
    noted = UNMARKED.search(text)
    assert noted is not None, "DECISIONS.md lacks the list of entries without a mark"
    unmarked = set(re.findall(r"GAP-[A-Z]+-[0-9]+", noted.group(1)))
    used = gap_ids(spec_document)
    unused = sorted(entries - used - unmarked)
    assert unused == [], (
        "mark the spec elements these decisions shape with x-gap, or add the ids to the "
        "'Entries without a mark in `openapi.yaml`' list of DECISIONS.md"
    )
    assert sorted(unmarked - entries) == []  # the n/a list names real entries only
    assert sorted(unmarked & used) == []  # and none that is in fact used


def _mappings(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping of a document with its JSON-pointer-like location, depth first."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from _mappings(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _mappings(value, f"{where}/{index}")


@pytest.mark.req("HAR-5")
def test_every_mark_says_how_the_profile_treats_it(spec_document: dict[str, Any]) -> None:
    problems: list[str] = []
    for where, node in _mappings(spec_document):
        override = node.get("x-gap-profile")
        if override is not None:
            if "x-gap" not in node:
                problems.append(f"{where}: x-gap-profile without x-gap")
            if not isinstance(override, dict) and override not in ("drop", "relax", "keep"):
                problems.append(f"{where}: unknown x-gap-profile {override!r}")
    assert problems == []


@pytest.mark.req("HAR-5", "RES-SESS-1", "RES-ASSET-1")
def test_seed_optional_marks_sit_on_required_nullable_properties(
    spec_document: dict[str, Any],
) -> None:
    """``x-seed-optional`` (GAP-NULL-1) only makes sense on a property the simulator requires and
    writes as null while unset; anywhere else it would be a mark that changes nothing."""
    problems: list[str] = []
    marked: list[str] = []
    for where, node in _mappings(spec_document):
        properties = node.get("properties")
        for name, prop in properties.items() if isinstance(properties, dict) else ():
            if not (isinstance(prop, dict) and "x-seed-optional" in prop):
                continue
            marked.append(f"{where}/{name}")
            if prop["x-seed-optional"] is not True:
                problems.append(f"{where}/{name}: x-seed-optional is not true")
            if name not in (node.get("required") or []):
                problems.append(f"{where}/{name}: marked but not required")
            if "null" not in str(prop):
                problems.append(f"{where}/{name}: marked but never null")
    assert problems == []
    assert len(marked) == 8  # session: 3, asset: 5 (DECISIONS GAP-NULL-1)
