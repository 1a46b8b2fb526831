"""The testing reference page is the code's own declarations, written out (HAR-28).

Its tables (helpers and fixtures, statuses, events with their data keys and reasons, ``SimAdmin``
methods with their units, fault parameters with their limits) are rewritten from the code by
``harness.testing.reference``; the page in the checkout must be what that writes, and each table
must follow a change of the declaration it is read from. The README links the page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.testing import reference

pytestmark = pytest.mark.req("HAR-28")

ROOT = Path(__file__).resolve().parents[2]


def test_the_page_is_what_the_code_declares() -> None:
    page = reference.PAGE.read_text(encoding="utf-8")
    assert reference.render(page) == page, "stale: run python -m harness.testing.reference"
    assert reference.main(["--check"]) == 0


def test_the_readme_links_the_page() -> None:
    assert "docs/testing-reference.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_a_changed_declaration_makes_the_page_stale(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sim.sessions import events

    page = reference.PAGE.read_text(encoding="utf-8")
    changed = dict(events.SESSION_EVENTS)
    changed["session.paused"] = events.EventFields("paused_seconds", "float")
    monkeypatch.setattr(events, "SESSION_EVENTS", changed)
    assert "`session.paused` | `object`, `paused_seconds`" in reference.render(page)
    copy = tmp_path / "page.md"
    copy.write_text(page, encoding="utf-8")
    assert reference.main(["--check", "--page", str(copy)]) == 1


def test_the_tables_carry_what_a_test_author_looks_for() -> None:
    tables = reference.tables()
    assert (
        "`session.ended` | `object`, `reason` | `client_request`, `idle_timeout`"
        in (tables["events"])
    )
    assert "`drain_seconds`" in tables["events"] and "`dropped_seconds`" in tables["events"]
    assert "| `lose_heartbeats` | session_id, seconds (simulated seconds) |" in tables["admin"]
    assert "`at_capacity`" in tables["admin"] and "`purge_failure`" in tables["admin"]
    assert "`sessions.heartbeat_loss_limit_seconds` | 30 (simulated seconds)" in tables["faults"]
    assert "`scheduler.max_queue_length` | 16 (count)" in tables["faults"]
    assert "15 (wall seconds)" in tables["faults"]  # a receiver answers in real time


def test_a_page_without_a_block_is_refused() -> None:
    with pytest.raises(ValueError, match="the page has no block"):
        reference.render("<!-- generated: helpers -->\n<!-- end: helpers -->\n")
