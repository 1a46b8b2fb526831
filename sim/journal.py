"""All or nothing: how an operation that fails half-way leaves no trace (GAP-ERR-6).

A create first runs every check and stores nothing (it returns a ``Prepared``); its ``commit``
then makes several changes: the record, the indexes that find it, a concurrency slot, a ledger
row, a queued job, and the platform stores the idempotent outcome. Each change registers how to
undo itself with ``Journal.on_undo``. If anything raises before the operation ends (a refusal
found late, or a bug), ``Journal.atomic`` undoes the registered changes newest first and
re-raises, so no half-made object, cap slot, ledger row, event or idempotency entry survives a
500 and the next request meets the platform as it was.

What the rest of the platform would act on at once, an event's delivery to its subscribers (and
through them webhook deliveries) and new SimPy processes, is not undone but held back:
``Journal.defer`` runs it when the outermost block succeeds, and drops it when it fails. Outside
any block (timers firing as the clock advances, direct calls in tests) both are immediate:
``on_undo`` records nothing and ``defer`` runs the action at once.

Random draws (ids) are not undone: a request that fails after drawing an id leaves the id
streams moved on, which changes no record.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Concatenate, Literal, NamedTuple, ParamSpec, Protocol, TypeVar

__all__ = ["Journal", "Prepared", "committed", "discard"]

Action = Callable[[], object]
"""A change or its undo; whatever it returns is ignored."""

Held = tuple[Callable[..., object], tuple[Any, ...]]
"""A held-back call: the function and its arguments (``defer`` holds ``(action, ())``)."""


class Prepared(NamedTuple):
    """An operation whose every check has passed and which has changed nothing yet.

    ``commit()`` makes the change and returns the answer, inside the unit its caller holds
    open (``Journal.atomic``: the platform's door for every operation, or the service's own
    method called directly), so a change that fails half-way is undone with the rest. The door
    runs its last checks (the facade's schema) between the two, so a refusal there stores
    nothing either.
    """

    commit: Callable[[], dict[str, Any]]


class Journal:
    """The undo list and held-back actions of the operation in progress.

    ``atomic()`` returns the journal itself as the context manager, and nested blocks keep their
    savepoints on a stack, because every create opens two blocks (the platform's door and the
    service's commit) and a block must stay cheap beside the session it guards. The outermost
    block keeps no savepoint (it is always the start of both lists) and runs what it held back
    in place (``tests/sim/kernel/test_journal.py`` holds the rules).
    """

    def __init__(self) -> None:
        #: Undo steps of the open blocks, oldest first; always empty outside a block.
        self._undo: list[Action] = []
        #: Held-back calls, ``(function, arguments)``, run in order when the outermost block
        #: succeeds; always empty outside a block (``defer`` runs its action at once there).
        #: A producer that has just seen ``active`` true may append its pair here itself: the
        #: same as ``defer(partial(function, *arguments))`` (the event log's deliveries).
        self.deferred: list[Held] = []
        #: Savepoints of the open NESTED blocks, innermost last: (undo length, deferred length).
        #: The outermost block's savepoint is always (0, 0), so it keeps none: opening and
        #: closing it, which every operation does, costs no tuple and no lengths.
        self._marks: list[tuple[int, int]] = []
        #: Whether an ``atomic`` block is open. A plain attribute, not a property: the event log
        #: reads it for every event, so outside an operation it must cost next to nothing.
        self.active = False

    def atomic(self) -> Journal:
        """``with journal.atomic():`` undo the changes registered inside the block if it raises;
        a nested block is a savepoint of the enclosing one (its changes are undone if it raises,
        and stay part of the outer unit otherwise). The platform's door, which opens one for
        every operation, writes ``with journal:`` instead, which is the same."""
        return self

    def __enter__(self) -> None:
        if self.active:
            self._marks.append((len(self._undo), len(self.deferred)))
        else:
            self.active = True

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        marks = self._marks
        if error is None:  # the common case first: a savepoint kept, or the unit done
            if marks:
                marks.pop()
                return False
            self.active = False
            if self._undo:
                self._undo = []
            deferred = self.deferred
            if deferred:  # every held-back call runs; the first failure is raised
                self.deferred = []
                first: Exception | None = None
                for action, arguments in deferred:
                    try:
                        action(*arguments)
                    except Exception as failure:
                        first = first or failure
                if first is not None:
                    raise first
            return False
        outermost = not marks
        mark, deferred_mark = (0, 0) if outermost else marks.pop()
        undo = self._undo
        steps = undo[mark:]
        del undo[mark:]
        del self.deferred[deferred_mark:]
        if outermost:
            self.active = False
        _undo_all(steps, error)
        return False  # the error propagates

    def on_undo(self, step: Action) -> None:
        """Register how to reverse a change just made (nothing to do outside a block)."""
        if self.active:
            self._undo.append(step)

    def defer(self, action: Action) -> None:
        """Run ``action`` once the outermost block succeeds (at once outside any block)."""
        if self.active:
            self.deferred.append((action, ()))
        else:
            action()


class _Kernel(Protocol):
    @property
    def journal(self) -> Journal: ...


class _Service(Protocol):
    """A service of the platform: it keeps the kernel it was built with (``sim.kernel``)."""

    @property
    def _kernel(self) -> _Kernel: ...


S = TypeVar("S", bound=_Service)
P = ParamSpec("P")


def committed(
    prepare: Callable[Concatenate[S, P], Prepared],
) -> Callable[Concatenate[S, P], dict[str, Any]]:
    """The one-step form of a service's ``prepare_*`` method, for a caller outside the
    platform's door (a front end of the service's own, a test): the same parameters, every
    check, then the change, in one unit of the service's journal, answering what ``commit``
    answers. ``create = committed(prepare_create)`` in the service's class."""

    def one_step(service: S, /, *args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        with service._kernel.journal:  # one unit: undone as a whole if it fails half-way
            return prepare(service, *args, **kwargs).commit()

    one_step.__doc__ = f"``{prepare.__name__}`` and its ``commit``, in one unit of work."
    return one_step


def discard(items: list[Any], item: Any) -> None:
    """Remove ``item`` from ``items`` if it is there: an undo that is safe to run whether or not
    its change happened (the newest entry is looked at first; it is almost always the one)."""
    for index in range(len(items) - 1, -1, -1):
        if items[index] is item or items[index] == item:
            del items[index]
            return


def _undo_all(steps: list[Action], cause: BaseException) -> None:
    for step in reversed(steps):
        try:
            step()
        except Exception as failure:  # keep undoing the rest; the cause is what gets raised
            cause.add_note(f"undoing a change also failed: {failure!r}")
