"""Concurrency caps over non-terminal sessions (LIM-1, LIM-2, EP-SESS-4, GAP-LIM-4).

Counts are kept incrementally (one add at creation, one remove when a session turns terminal)
instead of scanning every session per create, so the cost of a create does not grow with history.
The per-key cap is checked before the organization's.
"""

from __future__ import annotations

from collections import Counter

from sim.errors import QuotaExceeded

__all__ = ["ConcurrencyCaps"]


class ConcurrencyCaps:
    def __init__(self, per_key: int) -> None:
        self.per_key = per_key
        self._by_key: Counter[str] = Counter()
        self._by_org: Counter[str] = Counter()

    def check(self, key_secret: str, org_id: str, org_limit: int) -> None:
        """Refuse with ``quota_exceeded``/``concurrent_sessions`` when a cap is reached."""
        if self._by_key[key_secret] >= self.per_key:
            raise QuotaExceeded(
                "concurrent_sessions",
                f"This API key already has {self.per_key} active session(s); end one first.",
            )
        if self._by_org[org_id] >= org_limit:
            raise QuotaExceeded(
                "concurrent_sessions",
                f"This organization already has {org_limit} active sessions; end one first.",
            )

    def add(self, key_secret: str, org_id: str) -> None:
        self._by_key[key_secret] += 1
        self._by_org[org_id] += 1

    def remove(self, key_secret: str, org_id: str) -> None:
        if self._by_key[key_secret] <= 0 or self._by_org[org_id] <= 0:
            raise AssertionError("concurrency count would go negative")
        self._by_key[key_secret] -= 1
        self._by_org[org_id] -= 1
