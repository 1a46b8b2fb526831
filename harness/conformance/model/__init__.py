"""The reference model of the seed's observable rules (``SeedModel``) and its rules.

Importing the package registers every rule as a check of kind ``model``.
"""

from __future__ import annotations

from harness.conformance.model.core import SeedModel
from harness.conformance.model.nonces import NONCE
from harness.conformance.model.rules import RULES, Verdict

__all__ = ["NONCE", "RULES", "SeedModel", "Verdict"]
