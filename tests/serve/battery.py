"""What a served simulator must survive: the bad-input battery and many concurrent clients.

``battery(base_url, admin_token)`` replays, over real HTTP, every input the issue reported as
breaking ``avatar-sim serve`` (and their neighbours): escaped lone surrogates in a session's
``transport.room_name`` and a run's ``external_id``, ``1e999`` and ``NaN`` in metadata, a
400-digit integer, JSON nested a thousand deep, a body that is not UTF-8, an empty JSON body, a
usage window in year 1, a clock advance of ``1e12`` seconds (twice), curl's form content type on
the admin API, oversized headers. After each one the organization's lists and the public routes
must still answer valid JSON. ``load(...)`` runs many concurrent clients, each with an organization
of its own, through a mix of creates, reads and ends. Both check every answer: no 5xx, and every
body valid JSON by a strict parser (no ``NaN``/``Infinity``), every refusal the envelope.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.asgi.support import ENVELOPE_KEYS, strict_json
from tests.world import session_body

__all__ = ["Tally", "battery", "load"]

_SESSION = session_body(quality="mock")


@dataclass
class Tally:
    """What the server answered: statuses, and every answer that broke the rules."""

    statuses: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def judge(self, what: str, response: httpx.Response) -> Any:
        self.statuses[response.status_code] += 1
        if response.status_code >= 500:
            self.problems.append(f"{what}: {response.status_code} {response.text[:200]}")
        if not response.headers.get("x-request-id", "").startswith("req_"):
            self.problems.append(f"{what}: no X-Request-Id")
        try:
            body = strict_json(response.content)
        except ValueError as error:
            if response.headers.get("content-type", "").startswith("application/json"):
                self.problems.append(f"{what}: invalid JSON ({error}): {response.text[:200]}")
            return None
        if response.status_code >= 400 and (
            not isinstance(body, dict)
            or set(body) != {"error"}
            or set(body["error"]) != ENVELOPE_KEYS
        ):
            self.problems.append(f"{what}: not the envelope: {response.text[:200]}")
        return body


#: (name, method, path, body text or None, content type, extra headers)
BAD_INPUTS: list[tuple[str, str, str, bytes | None, str | None]] = [
    ("surrogate room_name", "POST", "/v1/sessions",
     b'{"avatar_id":"av_stock_mock","transport":{"type":"livekit","url":"wss://x",'
     b'"room_name":"\\ud800"}}', "application/json"),
    ("surrogate external_id", "POST", "/v1/run/sim/echo-text",
     b'{"input":{"prompt":"x"},"external_id":"\\ud800"}', "application/json"),
    ("surrogate metadata key", "POST", "/v1/sessions",
     b'{"avatar_id":"av_stock_mock","transport":{"type":"livekit","url":"wss://x",'
     b'"room_name":"r"},"metadata":{"\\udfff":1}}', "application/json"),
    ("1e999 in metadata", "POST", "/v1/run/sim/echo-text",
     b'{"input":{"prompt":"x"},"metadata":{"a":1e999}}', "application/json"),
    ("NaN in metadata", "POST", "/v1/run/sim/echo-text",
     b'{"input":{"prompt":"x"},"metadata":{"a":NaN}}', "application/json"),
    ("400-digit integer", "POST", "/v1/run/sim/echo-text",
     b'{"input":{"prompt":"x"},"metadata":{"a":' + b"9" * 400 + b"}}", "application/json"),
    ("deep nesting", "POST", "/v1/sessions",
     b'{"avatar_id":"av_stock_mock","transport":{"type":"livekit","url":"wss://x",'
     b'"room_name":"r"},"metadata":{"a":' + b"[" * 900 + b"]" * 900 + b"}}", "application/json"),
    ("not UTF-8", "POST", "/v1/sessions", b'{"avatar_id":"\xff\xfe"}', "application/json"),
    ("empty JSON body", "POST", "/v1/sessions", b"", "application/json"),
    ("usage in year 1", "GET",
     "/v1/usage?period_start=0001-01-01T00:00:00Z&period_end=0001-01-02T00:00:00Z", None, None),
    ("non-UTF-8 query", "GET", "/v1/sessions?limit=%FF%FE", None, None),
    ("huge limit", "GET", "/v1/sessions?limit=" + "9" * 400, None, None),
    ("advance 1e12", "ADMIN", "/_sim/clock/advance", b'{"seconds": 1e12}', "application/json"),
    ("advance 1e12 again", "ADMIN", "/_sim/clock/advance", b'{"seconds": 1e12}',
     "application/json"),
    ("advance 1e999", "ADMIN", "/_sim/clock/advance", b'{"seconds": 1e999}', "application/json"),
    ("curl -d form type", "ADMIN", "/_sim/clock/advance", b'{"seconds": 1}',
     "application/x-www-form-urlencoded"),
    ("capacity 10^12", "ADMIN", "/_sim/faults/capacity", b'{"workers": 1000000000000}',
     "application/json"),
    ("oversized headers", "HUGE", "/v1/sessions", None, None),
]  # fmt: skip

PUBLIC = ["/v1/status", "/v1/billing/plans"]
OWN = ["/v1/sessions", "/v1/runs", "/v1/avatars", "/v1/assets", "/v1/usage", "/v1/billing/quota"]


async def _check_still_answering(
    http: httpx.AsyncClient, key: str, tally: Tally, after: str
) -> None:
    for path in PUBLIC:
        body = tally.judge(f"{path} after {after}", await http.get(path))
        if body is None:
            tally.problems.append(f"{path} after {after}: no JSON body")
    for path in OWN:
        response = await http.get(path, headers={"Authorization": f"Bearer {key}"})
        tally.judge(f"{path} after {after}", response)
        if response.status_code != 200:
            tally.problems.append(f"{path} after {after}: {response.status_code}")


async def _organization(http: httpx.AsyncClient, admin: dict[str, str], name: str) -> str:
    created = await http.post(
        "/_sim/organizations", json={"name": name, "plan": "pro"}, headers=admin
    )
    created.raise_for_status()
    return str(created.json()["keys"]["unrestricted"])


async def battery(base_url: str, admin_token: str) -> Tally:
    """Every bad input, each followed by proof that the organization and the public still work."""
    tally = Tally()
    admin = {"Authorization": f"Bearer {admin_token}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        key = await _organization(http, admin, "Battery")
        auth = {"Authorization": f"Bearer {key}"}
        for name, method, path, content, content_type in BAD_INPUTS:
            headers = dict(admin if method == "ADMIN" else auth)
            if content_type is not None:
                headers["Content-Type"] = content_type
            if method == "HUGE":
                headers["X-Padding"] = "p" * 16_000
            verb = "POST" if method in ("ADMIN", "HUGE") else method
            response = await http.request(verb, path, content=content, headers=headers)
            tally.judge(name, response)
            await _check_still_answering(http, key, tally, name)
        # The organization can still use its concurrency slot: nothing refused took it.
        created = await http.post("/v1/sessions", json=_SESSION, headers=auth)
        tally.judge("a good create after the battery", created)
        if created.status_code != 201:
            tally.problems.append(f"good create after the battery: {created.status_code}")
    return tally


async def _client(http: httpx.AsyncClient, key: str, rounds: int, tally: Tally) -> None:
    auth = {"Authorization": f"Bearer {key}"}
    for index in range(rounds):
        created = await http.post("/v1/sessions", json=_SESSION, headers=auth)
        session = tally.judge("create", created)
        tally.judge("list", await http.get("/v1/sessions?limit=5", headers=auth))
        tally.judge("status", await http.get("/v1/status"))
        run = await http.post(
            "/v1/run/sim/echo-text", json={"input": {"prompt": f"hi {index}"}}, headers=auth
        )
        tally.judge("run", run)
        tally.judge("usage", await http.get("/v1/usage", headers=auth))
        if created.status_code == 201 and isinstance(session, dict):
            tally.judge("get", await http.get(f"/v1/sessions/{session['id']}", headers=auth))
            tally.judge("end", await http.post(f"/v1/sessions/{session['id']}/end", headers=auth))


async def load(base_url: str, admin_token: str, *, clients: int, rounds: int) -> Tally:
    """``clients`` concurrent clients, each in an organization of its own, ``rounds`` each."""
    tally = Tally()
    admin = {"Authorization": f"Bearer {admin_token}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        keys = [await _organization(http, admin, f"Load {i}") for i in range(clients)]
        await asyncio.gather(*(_client(http, key, rounds, tally) for key in keys))
    return tally
