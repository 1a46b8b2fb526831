"""A lifecycle suite written from the README and the reference page alone (HAR-29): it names
nothing else. ``test_example_suite.py`` runs it unchanged in process and by URL, webhooks
included.

The suite (``suites/lifecycle_from_docs.py``) covers what a QA engineer reaches for: cancel while
starting, barge-in, max duration while talking, a worker crash, heartbeat loss, a run's lifecycle
and cancel, webhooks followed and retried, a dead webhook URL, the organization cap across keys,
the create rate limit and ``Retry-After``, ``503 at_capacity``, idempotency across the 24-hour
window and a bounded ``SessionMachine`` with a rule of its own. It is copied into a project of its
own and run as a user runs it, in a subprocess with only the plugin's options.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.req("HAR-29")

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).resolve().parent / "suites" / "lifecycle_from_docs.py"
DOCUMENTED = (ROOT / "README.md").read_text(encoding="utf-8") + (
    ROOT / "docs" / "testing-reference.md"
).read_text(encoding="utf-8")


def _copy(pytester: pytest.Pytester) -> int:
    source = SUITE.read_text(encoding="utf-8")
    pytester.makepyfile(test_lifecycle=source)
    return source.count("\ndef test_")


def test_the_suite_uses_only_what_the_readme_and_the_reference_page_name() -> None:
    tree = ast.parse(SUITE.read_text(encoding="utf-8"))
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "harness.testing"
        for alias in node.names
    ]
    fixtures = {
        arg.arg
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        for arg in node.args.args
    }
    assert imported and fixtures
    missing = [
        name
        for name in (*imported, *sorted(fixtures))
        if not re.search(rf"`{re.escape(name)}\b", DOCUMENTED)
    ]
    assert not missing, f"used but documented nowhere: {missing}"
