"""Durations in scenario files: plain seconds or a short human string (``90s``, ``2h30m``, ``30d``).

Why strings: a month-long billing scenario reads better as ``30d`` than as ``2592000``, and a
typo such as ``2hr`` must be refused naming the field rather than silently meaning something.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

__all__ = ["Seconds", "parse_duration"]

_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])")


def parse_duration(value: object) -> float:
    """Seconds from a number or a string of ``<number><unit>`` parts (units d, h, m, s)."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as '15m'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.replace(" ", "").lower()
        if not text or _PART.sub("", text):
            raise ValueError(f"{value!r} is not a duration such as '90s', '15m', '2h30m' or '30d'")
        seconds = sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text))
    else:
        raise ValueError("a duration is a number of seconds or a string such as '15m'")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


#: A non-negative number of simulated seconds, given as a number or a duration string.
Seconds = Annotated[float, BeforeValidator(parse_duration)]
