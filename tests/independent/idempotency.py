"""Idempotent creates: the same key and body within 24 hours replay the original response.

Only successful responses are remembered; a refusal can be retried with the same key. A key
reused with a different body is a 409 ``conflict``. Keys are scoped to the API key or to the
organization, and "same body" means the same JSON value or the same bytes, by reading.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from .errors import conflict, invalid
from .readings import Reading

WINDOW_SECONDS = 24 * 3600.0
MAX_KEY_LENGTH = 255


@dataclass
class Record:
    fingerprint: str
    status: int
    body: dict[str, Any]
    at: float


def check_key(value: str | None, reading: Reading, *, max_len: int = MAX_KEY_LENGTH) -> str | None:
    if value is None:
        return None
    if not 1 <= len(value) <= max_len:
        raise invalid(
            reading,
            "idempotency_key.invalid",
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters.",
            "Idempotency-Key",
        )
    return value


def fingerprint(raw: bytes, reading: Reading) -> str:
    if reading.idempotency_body_match == "canonical":
        with contextlib.suppress(ValueError):
            raw = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()


class IdempotencyStore:
    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.records: dict[tuple[str, str, str], Record] = {}

    def scope(self, key_id: str, org_id: str) -> str:
        return key_id if self.reading.idempotency_scope == "key" else org_id

    def lookup(
        self, scope: str, route: str, key: str, print_: str, t: float, *, check_body: bool = True
    ) -> Record | None:
        record = self.records.get((scope, route, key))
        if record is None or t - record.at >= WINDOW_SECONDS:
            return None
        if check_body and record.fingerprint != print_:
            raise conflict(
                "idempotency_key.reused",
                "This Idempotency-Key was used with a different request body.",
            )
        return record

    def remember(
        self, scope: str, route: str, key: str, print_: str, status: int, body: dict, t: float
    ) -> None:
        self.records[(scope, route, key)] = Record(print_, status, copy.deepcopy(body), t)
