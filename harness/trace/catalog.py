"""The requirement catalog (``spec/requirements.yaml``) as typed, validated records.

Why this module exists: tests name the requirement ids they prove (``@pytest.mark.req("SES-ST-2")``)
and ``python -m harness trace`` lists every id with the tests that prove it. Both need one
authoritative list of ids, read the same way everywhere, and a typo in a marker must fail loudly
rather than silently prove nothing. The catalog is data, not code, so that it can be read and
reviewed next to the contract in ``spec/``.

Where the catalog lives: in a source checkout it is ``<repo>/spec/requirements.yaml`` (found
relative to this package, so the working directory does not matter); an installed wheel carries
``spec/`` as ``harness/_spec`` (see ``[tool.hatch.build.targets.wheel.force-include]``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Final

import yaml

__all__ = [
    "CATALOG_FILE",
    "Catalog",
    "CatalogError",
    "Kind",
    "Requirement",
    "catalog_path",
    "load_catalog",
    "parse_catalog",
    "spec_dir",
]

CATALOG_FILE: Final = "requirements.yaml"
"""The catalog's file name inside the spec directory."""

ID_PATTERN: Final = re.compile(r"^[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[0-9]+$")
"""Upper-case dash-separated segments ending in a number: ``CONV-1``, ``RES-SESS-7``, ``SIM-1``."""

_FIELDS: Final = ("id", "kind", "section", "summary")


class Kind(StrEnum):
    """What kind of promise a requirement is; decides who must honour it (see HAR-5)."""

    CONTRACT = "C"
    """Stated by the seed: the simulator does it and conformance checks it on any deployment."""
    GAP = "G"
    """Left open by the seed: the simulator's documented choice; conformance must not check it."""
    SELF = "S"
    """The simulator's and harness's own features."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One atomic, testable requirement."""

    id: str
    kind: Kind
    section: str
    summary: str


class CatalogError(ValueError):
    """The catalog file is missing or malformed; the message names the file and the entry."""


@dataclass(frozen=True)
class Catalog:
    """Every requirement in file order, with lookup by id.

    File order is kept because the trace report follows it (sections read top to bottom as in the
    requirements document).
    """

    requirements: tuple[Requirement, ...]
    path: Path | None = None
    by_id: Mapping[str, Requirement] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, Requirement] = {}
        for requirement in self.requirements:
            if requirement.id in index:
                where = f"{self.path}: " if self.path is not None else ""
                raise CatalogError(f"{where}duplicate requirement id {requirement.id!r}")
            index[requirement.id] = requirement
        object.__setattr__(self, "by_id", MappingProxyType(index))

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(requirement.id for requirement in self.requirements)

    def __contains__(self, requirement_id: object) -> bool:
        return requirement_id in self.by_id

    def __getitem__(self, requirement_id: str) -> Requirement:
        return self.by_id[requirement_id]

    def __iter__(self) -> Iterator[Requirement]:
        return iter(self.requirements)

    def __len__(self) -> int:
        return len(self.requirements)


def spec_dir() -> Path:
    """The directory holding the contract and the catalog.

    A source checkout (``<repo>/spec`` next to this package) wins over the copy packed into a
    wheel (``harness/_spec``), so edits to ``spec/`` take effect without reinstalling. It is the
    rule of ``sim.asgi.openapi.default_spec_dir``, restated here because the pytest plugin loads
    this module in every user's session and importing ``sim`` would load the simulator there; a
    test holds the two to the same answer.
    """
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "spec"
    if (checkout / CATALOG_FILE).is_file():
        return checkout
    return package / "_spec"


def catalog_path() -> Path:
    """The default catalog file: ``spec_dir() / "requirements.yaml"``."""
    return spec_dir() / CATALOG_FILE


def load_catalog(path: Path | None = None) -> Catalog:
    """Read and validate a catalog (default: the project's own).

    Raises ``CatalogError`` naming the file and the offending entry, so that a broken catalog
    stops a test run with a message a person can act on.
    """
    resolved = (path if path is not None else catalog_path()).resolve()
    return _load(resolved, resolved.stat().st_mtime_ns if resolved.is_file() else -1)


@functools.lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int) -> Catalog:
    # ``mtime_ns`` is only part of the cache key: an edited file is read again.
    if mtime_ns < 0:
        raise CatalogError(f"{path}: requirement catalog not found")
    try:
        document: object = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from exc
    return parse_catalog(document, path)


def parse_catalog(document: object, path: Path | None = None) -> Catalog:
    """Validate an already-parsed catalog document (``{"requirements": [...]}``)."""
    where = f"{path}: " if path is not None else ""
    if not isinstance(document, dict) or not isinstance(document.get("requirements"), list):
        raise CatalogError(f"{where}expected a top-level 'requirements:' list")
    entries: list[object] = document["requirements"]
    requirements: list[Requirement] = []
    for index, entry in enumerate(entries):
        label = f"{where}requirements[{index}]"
        if not isinstance(entry, dict):
            raise CatalogError(f"{label}: expected a mapping with {', '.join(_FIELDS)}")
        missing = [name for name in _FIELDS if name not in entry]
        extra = sorted(str(name) for name in entry if name not in _FIELDS)
        if missing or extra:
            raise CatalogError(f"{label}: missing fields {missing}, unknown fields {extra}")
        values = {name: entry[name] for name in _FIELDS}
        bad = [name for name, value in values.items() if not isinstance(value, str) or not value]
        if bad:
            raise CatalogError(f"{label}: fields {bad} must be non-empty strings")
        requirement_id, kind, section, summary = (str(values[name]).strip() for name in _FIELDS)
        if not ID_PATTERN.match(requirement_id):
            raise CatalogError(f"{label}: malformed id {requirement_id!r}")
        try:
            parsed_kind = Kind(kind)
        except ValueError:
            choices = ", ".join(member.value for member in Kind)
            raise CatalogError(
                f"{label} ({requirement_id}): kind {kind!r} is not one of {choices}"
            ) from None
        if "\n" in summary:
            raise CatalogError(f"{label} ({requirement_id}): summary must be one line")
        requirements.append(Requirement(requirement_id, parsed_kind, section, summary))
    return Catalog(tuple(requirements), path)
