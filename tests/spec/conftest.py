"""Fixtures for the contract tests: the spec, its profile and validators for their components."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from harness.contract import component_schema, derive_profile, load_spec
from harness.contract.loader import default_spec_dir, repo_root

Validator = Callable[[str], Draft202012Validator]


@pytest.fixture(scope="session")
def spec_dir() -> Path:
    return default_spec_dir()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The steering documents (seed, requirements) next to the repository, when present."""
    return repo_root().parent / "shared"


@pytest.fixture(scope="session")
def spec_document() -> dict[str, Any]:
    return load_spec()


@pytest.fixture(scope="session")
def profile_document(spec_document: dict[str, Any]) -> dict[str, Any]:
    return derive_profile(spec_document)


@pytest.fixture
def spec(spec_document: dict[str, Any]) -> dict[str, Any]:
    """A copy of the contract a test may modify."""
    return copy.deepcopy(spec_document)


def _validators(document: dict[str, Any]) -> Validator:
    cache: dict[str, Draft202012Validator] = {}

    def validator(name: str) -> Draft202012Validator:
        if name not in cache:
            cache[name] = Draft202012Validator(
                component_schema(document, name), format_checker=Draft202012Validator.FORMAT_CHECKER
            )
        return cache[name]

    return validator


@pytest.fixture(scope="session")
def sim_schema(spec_document: dict[str, Any]) -> Validator:
    """A validator of a component as the simulator's contract defines it."""
    return _validators(spec_document)


@pytest.fixture(scope="session")
def profile_schema(profile_document: dict[str, Any]) -> Validator:
    """A validator of a component as the contract profile defines it."""
    return _validators(profile_document)
