"""The session core's timers: entries of SimPy's calendar that cost one heap push each.

Why not ``env.timeout(delay).callbacks.append(closure)``: a session's life needs about three
timers (its placement, its first frame, its deadline), and a ``Timeout`` costs two Python frames
to build (its ``__init__`` and ``Environment.schedule``) plus a closure per timer; together about
half of what the timer costs from creation to its callback. Nobody ever waits on these timers:
they only call back. So a ``Timer`` is the least ``Environment.step`` needs of an event (its
``callbacks``, and ``_ok`` to say it did not fail) plus the few values its callback reads, and
it is pushed on the calendar exactly as ``Environment.schedule`` pushes an event:
``(now + delay, NORMAL, next(eid), event)``. Its place among equal times, and the count of
scheduled events (``sim.cost``), are therefore those of the ``Timeout`` it replaces; a test holds
the two to the same order.

The callbacks list of a kind of timer is built once and shared: ``step`` replaces the event's
list with ``None`` and iterates the old one, never changing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

import simpy
from simpy.events import NORMAL as _NORMAL

from sim.sessions.records import SessionState

__all__ = ["NORMAL", "Timer", "calendar"]

#: The priority ``Environment.schedule`` gives a ``Timeout`` (after URGENT ones at equal times).
NORMAL: Final[int] = _NORMAL


class Timer:
    """One pending callback on SimPy's calendar (see the module docstring).

    Built with ``Timer()`` and its attributes set by the caller (no ``__init__`` frame), then
    pushed with ``heappush(queue, (env._now + delay, NORMAL, next(eid), timer))``, ``queue`` and
    ``eid`` being ``calendar(env)``.
    """

    __slots__ = ("callbacks", "generation", "state", "value")
    #: ``Environment.step`` reads it after the callbacks: a timer never fails.
    _ok: ClassVar[bool] = True

    callbacks: list[Callable[[Timer], None]] | None
    state: SessionState  # the session it is about, if any
    generation: int  # ``state.generation`` when armed: a later transition makes it stale
    value: Any  # what the callback needs besides (a trigger, a deadline)


def calendar(env: simpy.Environment) -> tuple[list[Any], Any]:
    """SimPy's calendar heap and its event counter, which ``Environment.schedule`` uses (SimPy
    exposes no cheaper public way to schedule a plain callback)."""
    return env._queue, env._eid
