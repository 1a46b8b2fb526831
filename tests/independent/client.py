"""An in-process client for this package's own tests: the app, a manual clock, and shortcuts.

Probes drive the service exactly as a tester would over HTTP (``httpx.ASGITransport``), but on
a :class:`.clock.ManualClock`, so "wait 16 seconds" is instant and every probe is deterministic.
The clock starts at a fixed noon UTC on a minute boundary, which keeps fixed rate-limit windows
and day buckets predictable.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import httpx
from PIL import Image

from .clock import ManualClock
from .readings import READINGS, Reading
from .serving import create_app

START = datetime(2026, 3, 17, 12, 0, 0, tzinfo=UTC)
LIVEKIT = {
    "type": "livekit",
    "url": "wss://rooms.example.com",
    "room_name": "probe-room",
    "worker_token": "wt_customer_minted",
}
STOCK = "av_stock_maya"


def image_bytes(fmt: str = "PNG", size: int = 96) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), (180, 120, 90)).save(buf, fmt)
    return buf.getvalue()


def session_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"avatar_id": STOCK, "transport": dict(LIVEKIT)}
    body.update(overrides)
    return body


class Api:
    """One fresh service and a client holding its credentials."""

    def __init__(self, reading: str = "a", faults: Iterable[str] = (), workers: int = 8) -> None:
        self.clock = ManualClock(START)
        self.app, self.creds = create_app(reading, faults, workers=workers, clock=self.clock)
        self.reading: Reading = READINGS[reading]
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://testserver"
        )

    async def __aenter__(self) -> Api:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    # -- plumbing -------------------------------------------------------------------------------

    def auth(self, key: str | None = "api_key") -> dict[str, str]:
        return {} if key is None else {"Authorization": f"Bearer {self.creds[key]}"}

    def wait(self, seconds: float) -> None:
        self.clock.advance(seconds)

    async def get(self, path: str, key: str | None = "api_key", **kw: Any) -> httpx.Response:
        headers = {**self.auth(key), **kw.pop("headers", {})}
        return await self.http.get(path, headers=headers, **kw)

    async def post(self, path: str, key: str | None = "api_key", **kw: Any) -> httpx.Response:
        headers = {**self.auth(key), **kw.pop("headers", {})}
        return await self.http.post(path, headers=headers, **kw)

    async def delete(self, path: str, key: str | None = "api_key", **kw: Any) -> httpx.Response:
        headers = {**self.auth(key), **kw.pop("headers", {})}
        return await self.http.delete(path, headers=headers, **kw)

    # -- shortcuts ------------------------------------------------------------------------------

    async def create_session(
        self, key: str = "api_key", headers: dict[str, str] | None = None, **overrides: Any
    ) -> httpx.Response:
        return await self.post(
            "/v1/sessions", key, json=session_body(**overrides), headers=headers or {}
        )

    async def running_session(self, key: str = "api_key", **overrides: Any) -> str:
        r = await self.create_session(key, **overrides)
        assert r.status_code in (200, 201), r.text
        self.wait(3.5)
        return r.json()["id"]

    async def end(self, session_id: str, key: str = "api_key") -> httpx.Response:
        return await self.post(f"/v1/sessions/{session_id}/end", key)

    async def session(self, session_id: str, key: str = "api_key") -> dict[str, Any]:
        return (await self.get(f"/v1/sessions/{session_id}", key)).json()

    async def pipecat(self, key: str = "api_key", **fields: Any) -> httpx.Response:
        return await self.post("/v1/pipecat/sessions", key, json={"avatar_id": STOCK, **fields})

    async def upload(
        self, data: bytes, filename: str = "portrait.png", *, key: str = "api_key", **form: str
    ) -> httpx.Response:
        ctype = {"png": "image/png", "jpg": "image/jpeg", "gif": "image/gif"}.get(
            filename.rsplit(".", 1)[-1], "application/octet-stream"
        )
        return await self.post(
            "/v1/avatars", key, files={"image": (filename, data, ctype)}, data=form
        )

    async def run(
        self, model: str | None = None, key: str = "api_key", *, finish: bool = True, **kw: Any
    ) -> dict[str, Any]:
        model = model or self.creds["models"][0]
        r = await self.post(f"/v1/run/{model}", key, json=self.creds["run_json"], **kw)
        assert r.status_code in (200, 202), r.text
        if finish:
            self.wait(10)
        return r.json()

    async def media_run(self, key: str = "api_key") -> dict[str, Any]:
        return await self.run(self.creds["media_model"], key)

    async def asset_bytes(self, asset_id: str, key: str = "api_key") -> bytes:
        """The asset's bytes, inline (base64) or through the signed link, by reading."""
        body = (await self.get(f"/v1/assets/{asset_id}/content", key)).json()
        if "data" in body:
            return base64.b64decode(body["data"])
        return (await self.http.get(body["url"])).content

    def cancel_path(self, run_id: str) -> str:
        if self.reading.cancel_path == "slash":
            return f"/v1/runs/{run_id}/cancel"
        return f"/v1/runs/{run_id}:cancel"

    def events_params(self, cursor: int | None = None, limit: int | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if cursor is not None:
            name = "starting_after" if self.reading.run_events_cursor == "after" else "offset"
            params[name] = cursor
        if limit is not None:
            params["limit"] = limit
        return params

    def avatar_filter(self, which: str | None = None, search: str | None = None) -> dict[str, str]:
        filter_name, search_name = self.reading.avatar_filter_params
        params = {}
        if which is not None:
            params[filter_name] = which
        if search is not None:
            params[search_name] = search
        return params
