"""The simulator's controls with one vocabulary, in process or through a served ``/_sim`` API.

They are defined with the targets they drive (``harness.testing.target``: an in-process target
has its admin, and an admin's ``client`` is bound to its target); this module names them.
"""

from __future__ import annotations

from harness.testing.target import AdminRefused, HttpAdmin, InProcessAdmin, SimAdmin

__all__ = ["AdminRefused", "HttpAdmin", "InProcessAdmin", "SimAdmin"]
