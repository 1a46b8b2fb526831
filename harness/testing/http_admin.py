"""``HttpAdmin``: ``SimAdmin`` through a served simulator's ``/_sim`` API.

Why apart from ``harness.testing.admin``: the vocabulary and the in-process door are one
concept, the HTTP door another; each answers the same ``/_sim`` bodies.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

import httpx

from harness.testing.admin import AdminRefused, AudioKind, SimAdmin, SimSeconds, moment
from harness.testing.target import Target, UrlTarget, url_client

__all__ = ["HttpAdmin"]


class HttpAdmin(SimAdmin):
    """``SimAdmin`` over a served simulator's ``/_sim`` API (``avatar-sim serve`` prints the
    admin token and writes it with ``--keys-out``).

    Example::

        with HttpAdmin("http://127.0.0.1:8080", "simadmin_...") as admin:
            admin.set_capacity(0)
            ...
            admin.restore()
    """

    kind: Literal["in_process", "url"] = "url"

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.base_url = base_url.rstrip("/")
        #: The admin token it sends (what ``SessionMachine.for_client`` hands on).
        self.token = token
        self._http = httpx.Client(
            base_url=f"{self.base_url}/_sim",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
        )
        self._target: Target | None = None
        self._epoch: datetime | None = None  # the served clock's epoch, read once

    @property
    def target(self) -> Target:
        if self._target is None:
            self._target = UrlTarget(self.base_url, self)
        return self._target

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        response = self._http.request(method, path, json=body, params=params)
        if response.status_code >= 300:
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "http_error", response.text[:200]
            raise AdminRefused(code, message, response.status_code)
        return response.json()

    def now(self) -> SimSeconds:
        return float(self._call("GET", "/clock")["seconds"])

    def advance(self, seconds: SimSeconds) -> SimSeconds:
        return float(self._call("POST", "/clock/advance", {"seconds": seconds})["seconds"])

    def step(self, within: SimSeconds) -> SimSeconds:
        return float(self._call("POST", "/clock/step", {"within": within})["seconds"])

    def seconds_at(self, timestamp: str) -> SimSeconds:
        if self._epoch is None:
            clock = self._call("GET", "/clock")
            self._epoch = moment(str(clock["now"])) - timedelta(seconds=float(clock["seconds"]))
        return (moment(timestamp) - self._epoch).total_seconds()

    def create_organization(
        self, name: str = "test organization", plan: str = "enterprise", **options: Any
    ) -> dict[str, Any]:
        created: dict[str, Any] = self._call(
            "POST", "/organizations", {"name": name, "plan": plan, **options}
        )
        return created

    def create_key(self, org_id: str, scopes: Sequence[str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"org_id": org_id}
        if scopes is not None:
            body["scopes"] = list(scopes)
        created: dict[str, Any] = self._call("POST", "/keys", body)
        return created

    def describe_key(self, key: str) -> dict[str, Any]:
        described: dict[str, Any] = self._call("POST", "/keys/describe", {"key": key})
        return described

    def client(self, key: str) -> httpx.Client:
        return url_client(self.base_url, key, admin=self)

    def play_audio(
        self, session_id: str, kind: AudioKind = "speech", seconds: SimSeconds = 5.0
    ) -> dict[str, Any]:
        played: dict[str, Any] = self._call(
            "POST", f"/sessions/{session_id}/audio", {"kind": kind, "duration": seconds}
        )
        return played

    def barge_in(self, session_id: str) -> dict[str, Any]:
        cleared: dict[str, Any] = self._call("POST", f"/sessions/{session_id}/clear_buffer")
        return cleared

    def session_events(self, session_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", f"/sessions/{session_id}/events")["data"])

    def crash_worker(self, session_id: str) -> dict[str, Any]:
        crashed: dict[str, Any] = self._call(
            "POST", "/faults/worker_crash", {"session_id": session_id}
        )
        return crashed

    def capacity(self) -> dict[str, Any]:
        pool: dict[str, Any] = self._call("GET", "/faults/capacity")
        return pool

    def _set_capacity(self, workers: int) -> dict[str, Any]:
        pool: dict[str, Any] = self._call("POST", "/faults/capacity", {"workers": workers})
        return pool

    def _set_queue_size(self, sessions: int) -> dict[str, Any]:
        pool: dict[str, Any] = self._call("POST", "/faults/queue", {"size": sessions})
        return pool

    def _slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"extra_seconds": extra_seconds}
        if duration is not None:
            body["duration"] = duration
        pool: dict[str, Any] = self._call("POST", "/faults/slow_startup", body)
        return pool

    def lose_heartbeats(self, session_id: str, seconds: SimSeconds) -> dict[str, Any]:
        lost: dict[str, Any] = self._call(
            "POST", "/faults/heartbeat_loss", {"session_id": session_id, "duration": seconds}
        )
        return lost

    def _purge_failure(self, enabled: bool) -> dict[str, Any]:
        answer: dict[str, Any] = self._call("POST", "/faults/purge_failure", {"enabled": enabled})
        return answer

    def _register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"org_id": org_id, "url": url}
        if event_types is not None:
            body["event_types"] = list(event_types)
        endpoint: dict[str, Any] = self._call("POST", "/webhooks", body)
        return endpoint

    def _unregister_webhook(self, endpoint_id: str) -> dict[str, Any]:
        removed: dict[str, Any] = self._call("DELETE", f"/webhooks/{endpoint_id}")
        return removed

    def webhook_deliveries(self, org_id: str) -> list[dict[str, Any]]:
        listed = self._call("GET", "/webhooks/deliveries", params={"org_id": org_id})
        return list(listed["data"])

    def close(self) -> None:
        self._http.close()
