"""What machine a benchmark report was measured on, printed first by ``make bench``.

Why: the same tree measured on two machines of the same kind here took 13.4 s and 20.8 to 23.0 s
for the 100k month (bare SimPy, the ratios' yardstick, ran 47.2k and about 24k customers a second
on them), and the interpreter's build moves it too. ``bench.reference`` scales the month's
seconds to the machine its goals were set on, but only to about ±20 %; a wall-time figure
without its machine cannot be compared with anything, so every report says what it ran on: the
processor and its clock, the cores, the interpreter and how it was built, and how busy the
machine was when the report started.

Everything here is read from the running system (``/proc/cpuinfo`` where there is one); a value
the system does not give is ``None``, never a guess.
"""

from __future__ import annotations

import os
import platform
import sys
import sysconfig
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["describe"]

_CPUINFO = Path("/proc/cpuinfo")


def _cpuinfo(text: str) -> dict[str, str]:
    """The first processor's fields of a ``/proc/cpuinfo`` text (name: value)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block ends here
            continue
        name, sep, value = line.partition(":")
        if sep:
            fields.setdefault(name.strip(), value.strip())
    return fields


def _mhz(value: str | None) -> float | None:
    try:
        return None if value is None else round(float(value))
    except ValueError:
        return None


def describe(cpuinfo: str | None = None) -> dict[str, Any]:
    """The machine and interpreter this process runs on (``cpuinfo``: a ``/proc/cpuinfo`` text,
    read from the system when not given)."""
    if cpuinfo is None:
        try:
            cpuinfo = _CPUINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    fields = _cpuinfo(cpuinfo)
    config_args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not every system has a load average
        load = None
    return {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "processor": fields.get("model name") or platform.processor() or None,
        "processor_mhz": _mhz(fields.get("cpu MHz")),
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "python_executable": sys.executable,
        # A profile-guided and link-time-optimized build runs this simulator about 8 % faster.
        "python_pgo": "--enable-optimizations" in config_args,
        "python_lto": "--with-lto" in config_args,
        "load_average": load,
    }
