"""The last HTTP requests the facade answered, for ``GET /_sim/requests`` (HAR-31).

Why the facade keeps them and the platform's API log (``sim.apilog``) does not: that log records
what the domain decided (the operation, the organization, the outcome code), the same for a
Python caller and an HTTP one, and it is sized for months of calls. What a developer pointing an
app at a served simulator asks is HTTP's: which request id got which status, under which key, for
which session, including the requests refused before any operation ran (an unknown route, a
revoked key). Only this layer sees those facts, so only it records them, in a ring of the newest
``SimConfig.admin.request_log_size`` requests, and only when an admin token exists to read them.

A key is named by its non-secret handle (``Caller.key_id``: the prefix and the first characters),
also for a key that was refused, so a filter by key finds its 401s too; never by its secret.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sim.accounts import KEY_ID_LENGTH, KEY_PREFIX, Caller
from sim.errors import Unprocessable

__all__ = ["LoggedRequest", "RequestLog", "key_id_of"]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    at: float  # simulated seconds
    request_id: str
    method: str
    path: str
    operation_id: str | None  # None: no operation matched (404, 405)
    status: int
    code: str | None  # the error code; None for a success
    key_id: str | None
    org_id: str | None  # the authenticated caller's organization
    resource_id: str | None  # the resource the request named or created
    replayed: bool

    def to_resource(self, timestamp: Callable[[float], str]) -> dict[str, Any]:
        """JSON-ready, its time written by ``timestamp`` (``Clock.timestamp``)."""
        return {
            "object": "request",
            "request_id": self.request_id,
            "at": timestamp(self.at),
            "method": self.method,
            "path": self.path,
            "operation_id": self.operation_id,
            "status": self.status,
            "code": self.code,
            "key_id": self.key_id,
            "org_id": self.org_id,
            "resource_id": self.resource_id,
            "replayed": self.replayed,
        }


def key_id_of(authorization: str | None, caller: Caller | None) -> str | None:
    """The key's handle: the caller's, or, for a refused key, the same prefix of what was sent."""
    if caller is not None:
        return caller.key_id
    if authorization is None:
        return None
    _, _, presented = authorization.partition(" ")
    return presented[:KEY_ID_LENGTH] if presented.startswith(KEY_PREFIX) else None


def resource_of(path_values: Mapping[str, str], body: object) -> str | None:
    """The resource a request touched: the id its path names, else the id of what it made
    (a Pipecat session's answer wraps its session)."""
    for value in path_values.values():
        return value
    if isinstance(body, dict):
        made = body.get("id")
        if isinstance(made, str):
            return made
        inner = body.get("session")
        if isinstance(inner, dict) and isinstance(inner.get("id"), str):
            return str(inner["id"])
    return None


class RequestLog:
    """A ring of the newest ``size`` requests."""

    def __init__(self, size: int) -> None:
        self._ring: deque[LoggedRequest] = deque(maxlen=size)

    def add(self, request: LoggedRequest) -> None:
        self._ring.append(request)

    def __len__(self) -> int:
        return len(self._ring)

    def newest(
        self, *, key_id: str | None = None, status: str | None = None, limit: int
    ) -> list[LoggedRequest]:
        """Newest first, at most ``limit``: only ``key_id``'s (a handle or a whole key: its
        handle is compared) and only ``status`` (``429``, or a class such as ``4xx``)."""
        wanted = _status_filter(status)
        handle = None if key_id is None else key_id[:KEY_ID_LENGTH]
        picked: list[LoggedRequest] = []
        for request in reversed(self._ring):
            if len(picked) >= limit:
                break
            if handle is not None and request.key_id != handle:
                continue
            if wanted is not None and not wanted(request.status):
                continue
            picked.append(request)
        return picked


def _status_filter(text: str | None) -> Callable[[int], bool] | None:
    if text is None or text == "":
        return None
    shape = text.lower()
    if len(shape) == 3 and shape[0] in "12345" and shape[1:] == "xx":
        first = int(shape[0])
        return lambda status: status // 100 == first
    if len(shape) == 3 and shape.isdigit():
        exact = int(shape)
        return lambda status: status == exact
    raise Unprocessable(
        "validation.type", "status: a status such as 429, or a class such as 4xx.", param="status"
    )
