"""The journal's blocks: undo on failure, held-back actions on success (``sim.journal``).

The journal keeps no savepoint for the outermost block and runs its held-back actions inline:
these tests hold that cheap shape to the rules every block follows, nested or not.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sim.journal import Journal


class Boom(Exception):
    pass


def _failing_block(journal: Journal, *steps: Callable[[], object]) -> None:
    """Open a block, take ``steps`` in it, then fail."""
    with journal:
        for step in steps:
            step()
        raise Boom


def test_outside_a_block_actions_run_at_once_and_nothing_is_kept() -> None:
    journal = Journal()
    done: list[str] = []
    journal.on_undo(lambda: done.append("undo"))
    journal.defer(lambda: done.append("deferred"))
    assert done == ["deferred"] and not journal.active
    with journal:
        pass
    assert done == ["deferred"]  # the undo registered outside a block never runs


def test_a_block_that_succeeds_runs_its_held_back_actions_in_order_and_forgets_its_undo() -> None:
    journal = Journal()
    done: list[str] = []
    with journal.atomic():
        assert journal.active
        journal.on_undo(lambda: done.append("undo"))
        journal.defer(lambda: done.append("first"))
        with journal:
            journal.defer(lambda: done.append("nested"))
        journal.defer(lambda: done.append("last"))
        assert done == []  # held back until the outermost block ends
    assert done == ["first", "nested", "last"] and not journal.active
    with pytest.raises(Boom):  # the old undo is gone: only this block's runs
        _failing_block(journal, lambda: journal.on_undo(lambda: done.append("second undo")))
    assert done == ["first", "nested", "last", "second undo"]


def test_a_call_held_directly_runs_with_its_arguments_in_order_with_deferred_ones() -> None:
    """A hot producer appends ``(function, arguments)`` to ``deferred`` itself (``sim.events``):
    it runs in its place among ``defer``'s actions, and is dropped with them when a block fails."""
    journal = Journal()
    done: list[str] = []
    with journal:
        journal.defer(lambda: done.append("first"))
        journal.deferred.append((done.append, ("held",)))
        with pytest.raises(Boom):
            _failing_block(journal, lambda: journal.deferred.append((done.append, ("dropped",))))
        journal.defer(lambda: done.append("last"))
    assert done == ["first", "held", "last"] and journal.deferred == []


def test_a_failed_block_undoes_newest_first_and_drops_what_it_held_back() -> None:
    journal = Journal()
    done: list[str] = []
    with pytest.raises(Boom):
        _failing_block(
            journal,
            lambda: journal.on_undo(lambda: done.append("undo 1")),
            lambda: journal.defer(lambda: done.append("deferred")),
            lambda: journal.on_undo(lambda: done.append("undo 2")),
        )
    assert done == ["undo 2", "undo 1"] and not journal.active
    with journal:  # the journal is whole again
        journal.defer(lambda: done.append("after"))
    assert done == ["undo 2", "undo 1", "after"]


def test_a_failed_nested_block_is_a_savepoint_of_the_outer_one() -> None:
    journal = Journal()
    done: list[str] = []
    with journal:
        journal.on_undo(lambda: done.append("outer undo"))
        journal.defer(lambda: done.append("outer deferred"))
        with pytest.raises(Boom):
            _failing_block(
                journal,
                lambda: journal.on_undo(lambda: done.append("inner undo")),
                lambda: journal.defer(lambda: done.append("inner deferred")),
            )
        assert done == ["inner undo"] and journal.active  # the outer block goes on
        with journal, journal:  # two levels deep, both kept
            journal.defer(lambda: done.append("deep deferred"))
    assert done == ["inner undo", "outer deferred", "deep deferred"]

    def kept_inner_block() -> None:
        with journal:
            journal.on_undo(lambda: done.append("kept inner undo"))

    with pytest.raises(Boom):  # the outer block fails later: its own undo runs
        _failing_block(
            journal, lambda: journal.on_undo(lambda: done.append("outer undo 2")), kept_inner_block
        )
    assert done[-2:] == ["kept inner undo", "outer undo 2"]


def test_every_held_back_action_runs_and_the_first_failure_is_raised() -> None:
    journal = Journal()
    done: list[str] = []

    def fail(name: str) -> None:
        done.append(name)
        raise Boom(name)

    def three_actions() -> None:
        with journal:
            journal.defer(lambda: fail("one"))
            journal.defer(lambda: fail("two"))
            journal.defer(lambda: done.append("three"))

    with pytest.raises(Boom, match="one"):
        three_actions()
    assert done == ["one", "two", "three"] and not journal.active
    with pytest.raises(Boom, match="alone"), journal:  # one action: its own failure
        journal.defer(lambda: fail("alone"))
    with journal:  # and the journal is whole again
        journal.defer(lambda: done.append("after"))
    assert done[-1] == "after"


def test_an_undo_that_fails_does_not_stop_the_others_and_is_noted() -> None:
    journal = Journal()
    done: list[str] = []

    def broken() -> None:
        raise ValueError("broken undo")

    with pytest.raises(Boom) as raised:
        _failing_block(
            journal,
            lambda: journal.on_undo(lambda: done.append("undo 1")),
            lambda: journal.on_undo(broken),
        )
    assert done == ["undo 1"]
    assert any("broken undo" in note for note in raised.value.__notes__)
