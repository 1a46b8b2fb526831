"""Building the records a session builds many of (``NamedTuple``s) from their fields, in order.

``tuples.new(Outcome, (body, media_type, replayed, rate))`` is ``Outcome(body, media_type,
replayed, rate)`` without the class's generated ``__new__``: the door's outcome, a plain
create's request and transport, its prepared change and a finished session's usage are built
so. A fast path beside its reference, the class call (``by_call``); ``bench/fast_paths.py``
names it and ``make bench`` prints what it saves a month.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, cast

__all__ = ["by_call", "new"]

T = TypeVar("T", bound=tuple[Any, ...])


class _New(Protocol):
    def __call__(self, cls: type[T], fields: tuple[Any, ...], /) -> T: ...


#: ``cls(*fields)`` for a ``NamedTuple`` class ``cls``, built as ``tuple.__new__`` builds it.
new: _New = cast(_New, tuple.__new__)


def _by_call(cls: type[T], fields: tuple[Any, ...], /) -> T:
    return cls(*fields)


#: ``new``'s reference: the class called with the fields.
by_call: _New = _by_call
