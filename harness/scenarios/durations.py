"""Durations in scenario files: plain seconds or a short human string (``90s``, ``2h30m``, ``30d``).

Why strings: a month-long billing scenario reads better as ``30d`` than as ``2592000``, and a
typo such as ``2hr`` must be refused naming the field rather than silently meaning something.
The units must come in order, each at most once (``1h30m``, not ``30m1h`` or ``1h1h``): a
repeated unit is almost always a slip of the keyboard, and adding the parts silently would run
a different experiment. NaN and infinite durations are refused: no simulation can end at them.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator

__all__ = ["Seconds", "parse_duration"]

_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0}
_NUMBER = r"(\d+(?:\.\d+)?)"
_WHOLE = re.compile("".join(rf"(?:{_NUMBER}{unit})?" for unit in _UNITS))
_EXAMPLES = "'90s', '15m', '2h30m' or '30d'"


def _from_text(value: str) -> float:
    text = value.replace(" ", "").lower()
    match = _WHOLE.fullmatch(text)
    if not text or match is None:
        raise ValueError(
            f"{value!r} is not a duration such as {_EXAMPLES} (units d, h, m, s in that "
            "order, each at most once)"
        )
    return sum(
        float(n) * scale for n, scale in zip(match.groups(), _UNITS.values(), strict=True) if n
    )


def parse_duration(value: object) -> float:
    """Seconds from a number or a string of ``<number><unit>`` parts (units d, h, m, s)."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as '15m'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        seconds = _from_text(value)
    else:
        raise ValueError("a duration is a number of seconds or a string such as '15m'")
    if not math.isfinite(seconds):
        raise ValueError("a duration must be a finite number of seconds")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


#: A non-negative number of simulated seconds, given as a number or a duration string.
Seconds = Annotated[float, BeforeValidator(parse_duration)]
