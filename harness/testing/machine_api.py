"""The contract operations ``SessionMachine`` drives, through either door.

Why a seam of its own: the machine judges answers (the body, or the error's type, code and
``Retry-After``), not transports. In process it calls ``Platform.call`` (the door the facade
goes through too: the same answers without HTTP's cost per step); by URL it sends the same
requests over HTTP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = ["Answer", "HttpApi", "PlatformApi"]


class Answer(NamedTuple):
    """What one call answered: the body when it succeeded, else the error's type and code
    (and ``Retry-After`` in seconds when the answer carried one)."""

    body: Any
    error_type: str | None = None
    code: str | None = None
    retry_after: float | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None

    def describe(self) -> str:
        return "ok" if self.ok else f"{self.error_type}/{self.code}"


class PlatformApi:
    """The contract operations the machine uses, through ``Platform.call`` (the in-process door
    the facade also goes through: the same answers, without HTTP's cost per step)."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform

    def _call(self, operation: str, key: str, params: dict[str, Any]) -> Answer:
        from sim.errors import DomainError

        try:
            caller = self.platform.authenticate(f"Bearer {key}")
            return Answer(self.platform.call(operation, caller, params).body)
        except DomainError as error:
            return Answer(None, error.type, error.code, error.retry_after)

    def create(self, key: str, body: dict[str, Any], idempotency_key: str | None) -> Answer:
        params: dict[str, Any] = {"body": body}
        if idempotency_key is not None:
            params["idempotency_key"] = idempotency_key
        return self._call("createSession", key, params)

    def retrieve(self, key: str, session_id: str) -> Answer:
        return self._call("retrieveSession", key, {"session_id": session_id})

    def end(self, key: str, session_id: str) -> Answer:
        return self._call("endSession", key, {"session_id": session_id})

    def quota(self, key: str) -> Answer:
        return self._call("getQuota", key, {})

    def usage(self, key: str) -> Answer:
        return self._call("getUsage", key, {})

    def close(self) -> None:
        return None


class HttpApi:
    """The same operations over HTTP, through the conformance harness's ``Target``: every
    exchange is shown to ``observers`` (the conformance model judges them, ``SessionMachine``
    reports what it finds)."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        from harness.conformance.target import Credentials, Target

        # The key goes in each request's own header; the target's credentials name none.
        self.target = Target.remote(base_url, Credentials(api=""), timeout=timeout)

    def _send(
        self,
        method: str,
        path: str,
        key: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Answer:
        exchange = self.target.request(
            method, path, role=None, json_body=body,
            headers={"Authorization": f"Bearer {key}", **(headers or {})},
        )  # fmt: skip
        answer = exchange.json()
        if exchange.status < 300:
            return Answer(answer)
        retry = exchange.headers.get("retry-after")
        try:
            error = answer["error"]
            kind, code = str(error["type"]), str(error["code"])
        except (KeyError, TypeError):
            kind, code = f"http_{exchange.status}", exchange.body[:200].decode(errors="replace")
        try:
            seconds = float(retry) if retry is not None else None
        except ValueError:
            seconds = None
        return Answer(None, kind, code, seconds)

    def create(self, key: str, body: dict[str, Any], idempotency_key: str | None) -> Answer:
        headers = {} if idempotency_key is None else {"Idempotency-Key": idempotency_key}
        return self._send("POST", "/v1/sessions", key, body, headers)

    def retrieve(self, key: str, session_id: str) -> Answer:
        return self._send("GET", f"/v1/sessions/{session_id}", key)

    def end(self, key: str, session_id: str) -> Answer:
        return self._send("POST", f"/v1/sessions/{session_id}/end", key)

    def quota(self, key: str) -> Answer:
        return self._send("GET", "/v1/billing/quota", key)

    def usage(self, key: str) -> Answer:
        return self._send("GET", "/v1/usage", key)

    def close(self) -> None:
        self.target.close()
