"""avatar-sim's domain: a SimPy discrete-event model of the Realtime Avatar and Model-Run API.

Plain Python and SimPy only: no HTTP, no pandas, no file I/O, no wall clock, no global random.
The HTTP facade lives in ``sim.asgi``, the one subpackage that speaks HTTP.
"""

from __future__ import annotations

from sim.clock import Clock
from sim.config import SimConfig
from sim.errors import DomainError

__all__ = ["Clock", "DomainError", "SimConfig"]
