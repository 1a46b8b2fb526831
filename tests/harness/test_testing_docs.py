"""Every state-transition helper says how to use it, and the documentation names it (HAR-7).

A helper a user cannot find, or finds without an example, is not there for them: each public name
of ``harness.testing`` and each fixture the plugin adds has a docstring with an example (an error
class needs only its docstring), and each is named in the README's testing sections, in the
testing reference page the README links (``docs/testing-reference.md``) or in the avatar-sim
section of ``pytest --help``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import harness.testing
from harness.testing import fixtures

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-7")

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGE = (ROOT / "docs" / "testing-reference.md").read_text(encoding="utf-8")
FIXTURES = fixtures.FIXTURES


def _section() -> str:
    start = README.index("## pytest plugin")
    end = README.index("\n## Command line", start + 1)
    return README[start:end] + PAGE


def _documented(name: str) -> bool:
    return re.search(rf"`{re.escape(name)}\b", _section()) is not None


@pytest.mark.parametrize("name", harness.testing.__all__)
def test_each_helper_has_a_docstring_with_an_example(name: str) -> None:
    helper = getattr(harness.testing, name)
    text = inspect.getdoc(helper) or ""
    assert text, f"{name} has no docstring"
    if not (inspect.isclass(helper) and issubclass(helper, Exception)):
        assert "Example::" in text, f"{name}'s docstring shows no example"


@pytest.mark.parametrize("name", FIXTURES)
def test_each_fixture_has_a_docstring_with_an_example(name: str) -> None:
    assert "Example::" in (inspect.getdoc(getattr(fixtures, name)) or "")


def test_each_helper_and_fixture_is_named_in_the_readme_or_the_help(
    pytester: pytest.Pytester,
) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    heading = help_text.index("\navatar-sim:\n")
    options = help_text[heading : help_text.index("\n\n", heading + 1)]
    missing = [
        name
        for name in (*harness.testing.__all__, *FIXTURES)
        if not _documented(name) and name not in options
    ]
    assert not missing, f"named neither in the README, the reference page nor --help: {missing}"
