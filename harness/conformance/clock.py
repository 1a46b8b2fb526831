"""How a conformance run lets time pass on its target.

Why a seam: the seed's time rules (timers, the rate window, the idempotency window, fitting) can
only be checked by letting the target's time pass, and a run has one of three ways to do it:

* ``AdminClock``: ``avatar-sim serve``'s own clock, moved through ``/_sim/clock/advance`` (given
  ``--sim-admin-token``); a wait costs one request.
* ``RealClock``: real waiting, the default against any deployment. ``factor`` is the target's
  wall seconds per target second (``--time-factor``: a served simulator at ``--time-factor 0.01``
  runs a hundred times faster, so a 60 s window takes 0.6 s). Each wait is shown while it runs.
* ``QuickClock`` (``--quick``): nothing waits; a check that needs to wait is incomplete.

Every duration a check asks for is in target seconds; only the clock knows what it costs.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from harness.conformance.checks import Incomplete

__all__ = [
    "AdminClock",
    "ClockKind",
    "QuickClock",
    "RealClock",
    "TargetClock",
    "WaitDisplay",
    "line_display",
    "tqdm_display",
]

ClockKind = Literal["admin", "real", "quick"]

#: Shows one real wait while it happens: ``(wall seconds, why, sleep)`` -> sleeps them.
WaitDisplay = Callable[[float, str, Callable[[float], None]], None]


class TargetClock(Protocol):
    """The target's time as a run sees it, in target seconds."""

    kind: ClockKind

    def now(self) -> float:
        """Target seconds since an arbitrary origin (only differences matter)."""
        ...

    def wall_seconds(self, seconds: float) -> float:
        """What a wait of ``seconds`` target seconds costs in wall seconds."""
        ...

    def wait(self, seconds: float, why: str) -> None:
        """Let ``seconds`` target seconds pass (``why`` is shown to the user)."""
        ...


def line_display(say: Callable[[str], None]) -> WaitDisplay:
    """A display that announces each wait in one line, then sleeps."""

    def show(seconds: float, why: str, sleep: Callable[[float], None]) -> None:
        say(f"waiting {_duration(seconds)}: {why}")
        sleep(seconds)

    return show


def tqdm_display(say: Callable[[str], None], *, minimum: float = 3.0) -> WaitDisplay:
    """A countdown bar on standard error for waits of ``minimum`` seconds or more when it is a
    terminal; a line otherwise."""
    from tqdm import tqdm

    fallback = line_display(say)

    def show(seconds: float, why: str, sleep: Callable[[float], None]) -> None:
        if seconds < minimum or not sys.stderr.isatty():
            fallback(seconds, why, sleep)
            return
        steps = math.ceil(seconds)
        with tqdm(
            total=steps, desc=f"waiting: {why}", unit="s", leave=False, file=sys.stderr
        ) as bar:
            left = seconds
            while left > 0:
                step = min(1.0, left)
                sleep(step)
                left -= step
                bar.update(1)

    return show


def _duration(seconds: float) -> str:
    if seconds >= 120:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.3g} s" if seconds < 10 else f"{seconds:.0f} s"


@dataclass
class RealClock:
    """Real waiting, scaled by the target's time factor (wall seconds per target second)."""

    factor: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic
    display: WaitDisplay = field(default=lambda seconds, _why, sleep: sleep(seconds))
    kind: ClockKind = "real"

    def now(self) -> float:
        return self.monotonic() / self.factor

    def wall_seconds(self, seconds: float) -> float:
        return max(seconds, 0.0) * self.factor

    def wait(self, seconds: float, why: str) -> None:
        if seconds > 0:
            self.display(self.wall_seconds(seconds), why, self.sleep)


@dataclass
class QuickClock:
    """``--quick``: no wait is taken; the check that asked for one is incomplete."""

    monotonic: Callable[[], float] = time.monotonic
    kind: ClockKind = "quick"

    def now(self) -> float:
        return self.monotonic()

    def wall_seconds(self, seconds: float) -> float:
        return 0.0

    def wait(self, seconds: float, why: str) -> None:
        if seconds > 0:
            raise Incomplete(f"{why}: needs a wait of {_duration(seconds)}", "without --quick")


class AdminRequests(Protocol):
    """The two admin requests the clock needs (``Context`` sends them through the target)."""

    def read_clock(self) -> float: ...

    def advance_clock(self, seconds: float) -> None: ...


@dataclass
class AdminClock:
    """``avatar-sim serve``'s simulated clock, read and moved through its admin API."""

    admin: AdminRequests
    kind: ClockKind = "admin"

    def now(self) -> float:
        return self.admin.read_clock()

    def wall_seconds(self, seconds: float) -> float:
        return 0.0

    def wait(self, seconds: float, why: str) -> None:
        if seconds > 0:
            self.admin.advance_clock(seconds)
