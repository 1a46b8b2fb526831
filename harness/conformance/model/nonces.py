"""``Nonces``: which resource each create request of the run was answered, by a value the
request carried in its metadata.

Why: a replay or a refused create must make nothing. A list cannot tell which request made a
resource, unless the request named itself: every resource carrying a request's nonce must be
the one that request was answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.target import Exchange

__all__ = ["NONCE", "ONCE", "Nonces"]

#: The metadata key whose value names one create request.
NONCE = "conformance_nonce"

ONCE = model_rule("creates_answered_once")


def nonce_of(resource: Any) -> str | None:
    """The nonce a request body or a resource carries in its metadata, if any."""
    metadata = resource.get("metadata") if isinstance(resource, dict) else None
    value = metadata.get(NONCE) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None


@dataclass
class Nonces:
    """The resources each nonce's create was answered."""

    answered: dict[str, set[str]] = field(default_factory=dict)

    def made(self, body: Any, resource_id: str) -> None:
        """A create whose body is ``body`` was answered ``resource_id``."""
        nonce = nonce_of(body)
        if nonce is not None:
            self.answered.setdefault(nonce, set()).add(resource_id)

    def judge(self, resource: dict[str, Any], exchange: Exchange) -> Iterator[Verdict]:
        """``resource`` was shown: if it carries a nonce, its create must have answered it."""
        nonce = nonce_of(resource)
        if nonce is None:
            return
        answered = self.answered.get(nonce, set())
        if resource.get("id") not in answered:
            yield Verdict.failed(
                ONCE, exchange,
                f"{resource.get('id')} carries the nonce of a create this run sent, which was "
                + (f"answered {sorted(answered)[0]}" if answered else "refused")
                + ": that create made a resource it did not answer",
            )  # fmt: skip
        else:
            yield Verdict.passed(ONCE, exchange)
