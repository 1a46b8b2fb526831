"""The scripted day of ``avatar-sim demo``: four organizations meet every behaviour a customer
meets, through the in-process HTTP facade on the manual clock.

The day uses the service through ``httpx.AsyncClient`` over ``httpx.ASGITransport`` (the seam the
conformance harness uses against a real URL), moving the clock through ``POST
/_sim/clock/advance``. It shows sessions ended by the client, by the idle timeout and by the
max-duration ceiling; a create refused by the per-key concurrency cap; the eleventh create in a
minute refused by the rate limit; a session failing ``no_capacity`` while the fleet is down (an
admin fault); an idempotent retry; a few runs; a run deletion on a plan that allows it and one
that does not. Everything is on the simulated clock and the seeded streams, so the same seed
gives the same records. The only thing read outside HTTP is the platform's event log (its
columns), for each session's end reason, which the contract carries only in the
``session.ended`` event.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from harness.runner.columns import to_frame
from sim.asgi.app import create_app
from sim.config import SimConfig
from sim.platform import Platform

__all__ = ["DemoResult", "RequestRecord", "StepRecord", "run_demo"]

BASE_URL = "http://avatar-sim.demo"
ADMIN_TOKEN = "simadmin_demo"  # in-process only: nothing listens on a port
AVATAR = "av_stock_aria"
HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class OrgSpec:
    name: str
    plan: str


ORGANIZATIONS: tuple[OrgSpec, ...] = (
    OrgSpec("Acme Studios", "enterprise"),
    OrgSpec("Bistro Bots", "pro"),
    OrgSpec("Corner Shop", "free"),
    OrgSpec("Delta Labs", "starter"),
)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One HTTP request the day made, and how it was answered."""

    at: str
    org: str
    method: str
    path: str
    status: int
    code: str | None
    retry_after: str | None
    request_id: str | None


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One line of the narrative: what the script did at a simulated time."""

    at: str
    org: str
    what: str


@dataclass(frozen=True, slots=True)
class DemoResult:
    """Everything the demo produced, as flat JSON-ready records."""

    seed: int
    steps: list[StepRecord]
    requests: list[RequestRecord]
    sessions: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    credits: list[dict[str, Any]]

    @property
    def refusals(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.status >= 400]


@dataclass(slots=True)
class _Org:
    name: str
    plan: str
    id: str
    key: str


class _Day:
    """The script's client: records every request, moves the clock, narrates."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.now = "start"
        self.seconds = 0.0
        self.steps: list[StepRecord] = []
        self.requests: list[RequestRecord] = []
        self.orgs: dict[str, _Org] = {}
        self._rooms = 0

    def say(self, org: str, what: str) -> None:
        self.steps.append(StepRecord(at=self.now, org=org, what=what))

    async def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = await self.http.request(
            method, f"/_sim{path}", json=body, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
        )
        if response.status_code >= 400:
            raise RuntimeError(f"admin {method} {path} failed: {response.text}")
        return response.json()

    async def advance_to(self, seconds: float) -> None:
        if seconds > self.seconds:
            clock = await self.admin("POST", "/clock/advance", {"seconds": seconds - self.seconds})
            self.seconds, self.now = float(clock["seconds"]), str(clock["now"])

    async def advance(self, seconds: float) -> None:
        await self.advance_to(self.seconds + seconds)

    async def call(
        self,
        org: str,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {self.orgs[org].key}", **(headers or {})}
        response = await self.http.request(method, path, json=body, headers=all_headers)
        code = None
        if response.status_code >= 400:
            code = response.json().get("error", {}).get("code")
        self.requests.append(
            RequestRecord(
                at=self.now,
                org=org,
                method=method,
                path=path,
                status=response.status_code,
                code=code,
                retry_after=response.headers.get("retry-after"),
                request_id=response.headers.get("x-request-id"),
            )
        )
        return response

    def session_body(self, quality: str, **timeouts: int) -> dict[str, Any]:
        self._rooms += 1
        transport = {
            "type": "livekit",
            "url": "wss://rooms.demo.invalid",
            "room_name": f"room-{self._rooms}",
            "worker_token": "wt_demo",
        }
        return {"avatar_id": AVATAR, "transport": transport, "quality": quality, **timeouts}

    async def create_session(
        self, org: str, quality: str, headers: dict[str, str] | None = None, **timeouts: int
    ) -> httpx.Response:
        return await self.call(
            org, "POST", "/v1/sessions", self.session_body(quality, **timeouts), headers
        )


def _outcome(response: httpx.Response) -> str:
    if response.status_code < 400:
        body = response.json()
        return f"{response.status_code} {body.get('id', '')} {body.get('status', '')}".strip()
    error = response.json()["error"]
    retry = response.headers.get("retry-after")
    suffix = f", Retry-After {retry} s" if retry else ""
    return f"{response.status_code} {error['code']}{suffix}"


async def _script(day: _Day, workers: int) -> None:
    """The day itself. Times are simulated; the clock moves only here."""
    clock = await day.admin("GET", "/clock")
    day.seconds, day.now = float(clock["seconds"]), str(clock["now"])
    for spec in ORGANIZATIONS:
        org = await day.admin("POST", "/organizations", {"name": spec.name, "plan": spec.plan})
        day.orgs[spec.name] = _Org(spec.name, org["plan"], org["id"], org["keys"]["unrestricted"])
        day.say(spec.name, f"signs up on the {org['plan']} plan")
    acme, bistro, corner, delta = (spec.name for spec in ORGANIZATIONS)

    await day.advance_to(9 * HOUR)
    response = await day.create_session(acme, "pro", idle_timeout_seconds=120)
    day.say(acme, f"starts a pro session: {_outcome(response)}")
    session = response.json()["id"]
    await day.advance(15)
    await day.admin("POST", f"/sessions/{session}/audio", {"kind": "speech", "duration": 90.0})
    day.say(acme, "talks to the avatar for 90 s")
    await day.advance(100)
    response = await day.call(acme, "POST", f"/v1/sessions/{session}/end")
    day.say(acme, f"ends the session: {_outcome(response)}")

    await day.advance_to(9 * HOUR + 5 * 60)
    response = await day.create_session(bistro, "standard")
    day.say(bistro, f"starts a standard session and never speaks: {_outcome(response)}")

    await day.advance_to(9 * HOUR + 10 * 60)
    response = await day.create_session(
        corner, "lite", max_duration_seconds=120, idle_timeout_seconds=600
    )
    day.say(corner, f"starts a lite session capped at 120 s: {_outcome(response)}")
    await day.advance(30)
    response = await day.create_session(corner, "lite")
    day.say(corner, f"tries a second session on the same key: {_outcome(response)}")

    await day.advance_to(9 * HOUR + 20 * 60)
    for attempt in range(1, 12):
        response = await day.create_session(delta, "mock")
        if response.status_code == 201:
            await day.call(delta, "POST", f"/v1/sessions/{response.json()['id']}/end")
            await day.advance(3)
        else:
            day.say(delta, f"create number {attempt} within a minute: {_outcome(response)}")
    day.say(delta, "a retry loop created and canceled 10 sessions in 30 s")

    await day.advance_to(9 * HOUR + 30 * 60)
    await day.admin("POST", "/faults/capacity", {"workers": 0})
    day.say("admin", "the whole worker fleet is lost (capacity 0)")
    response = await day.create_session(acme, "standard")
    day.say(acme, f"starts a session during the outage: {_outcome(response)}")
    await day.advance(30)
    await day.admin("POST", "/faults/capacity", {"workers": workers})
    day.say("admin", f"capacity restored ({workers} workers)")

    await day.advance_to(10 * HOUR)
    retry = {"Idempotency-Key": "bistro-morning-1"}
    body = day.session_body("lite")
    first = await day.call(bistro, "POST", "/v1/sessions", body, retry)
    again = await day.call(bistro, "POST", "/v1/sessions", body, retry)
    replayed = again.headers.get("idempotent-replayed", "false")
    day.say(
        bistro,
        f"retries a create with the same Idempotency-Key: {_outcome(first)}, then "
        f"{_outcome(again)} (replayed: {replayed})",
    )

    await day.advance_to(10 * HOUR + 30 * 60)
    run_ids: dict[str, list[str]] = {acme: [], corner: []}
    for org, model, body in (
        (acme, "sim/echo-text", {"input": {"prompt": "Write a greeting for the lobby screen."}}),
        (acme, "sim/speech", {"input": {"text": "Welcome to Acme Studios."}}),
        (corner, "sim/echo-text", {"input": {"prompt": "Today's specials, please."}}),
    ):
        response = await day.call(org, "POST", f"/v1/run/{model}", body)
        day.say(org, f"runs {model}: {_outcome(response)}")
        if response.status_code < 400:
            run_ids[org].append(response.json()["id"])
    await day.advance(5 * 60)
    for org in (acme, corner):
        if run_ids[org]:
            response = await day.call(org, "DELETE", f"/v1/runs/{run_ids[org][0]}")
            day.say(org, f"deletes a run's content: {_outcome(response)}")

    await day.advance_to(18 * HOUR)
    day.say("admin", "the day ends")


async def _collect_list(day: _Day, org: str, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        query = f"?limit=100&starting_after={cursor}" if cursor else "?limit=100"
        page = (await day.call(org, "GET", path + query)).json()
        items.extend(page["data"])
        if not page["has_more"]:
            return items
        cursor = page["next_cursor"]


async def _collect(day: _Day, platform: Platform) -> tuple[list[Any], list[Any], list[Any]]:
    events = to_frame(platform.kernel.events.export(), platform.clock)
    ended = events[events["type"] == "session.ended"]
    reasons = dict(zip(ended["object_id"], ended["reason"].astype(object), strict=True))
    sessions: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    credits: list[dict[str, Any]] = []
    for org in day.orgs.values():
        for item in reversed(await _collect_list(day, org.name, "/v1/sessions")):
            error = item.get("error") or {}
            sessions.append(
                {
                    "org": org.name,
                    "plan": org.plan,
                    "id": item["id"],
                    "status": item["status"],
                    "quality": item["quality"],
                    "created_at": item["created_at"],
                    "first_frame_at": item["first_frame_at"],
                    "billable_seconds": item["usage"]["billable_seconds"],
                    "end_reason": reasons.get(item["id"]),
                    "error_code": error.get("code"),
                }
            )
        for item in reversed(await _collect_list(day, org.name, "/v1/runs")):
            runs.append(
                {
                    "org": org.name,
                    "id": item["id"],
                    "model": item["model"],
                    "status": item["status"],
                    "credits_charged": item["credits"]["charged"],
                    "deleted": item.get("deleted_at") is not None,
                }
            )
        usage = (await day.call(org.name, "GET", "/v1/usage?period=current_month")).json()
        quota = (await day.call(org.name, "GET", "/v1/billing/quota")).json()
        credits.append(
            {
                "org": org.name,
                "plan": quota["plan_key"],
                "credits_charged": usage["credits_charged"],
                "billable_seconds": usage["billable_seconds"],
                "sessions_billed": usage["sessions"],
                "balance_credits": quota["balance_credits"],
                "quota_status": quota["status"],
            }
        )
    return sessions, runs, credits


async def _run(seed: int) -> DemoResult:
    config = SimConfig(seed=seed, public_base_url=BASE_URL)
    platform = Platform.create(config)
    app = create_app(platform, admin_token=ADMIN_TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as http:
        day = _Day(http)
        await _script(day, config.scheduler.workers)
        sessions, runs, credits = await _collect(day, platform)
    return DemoResult(
        seed=seed,
        steps=day.steps,
        requests=day.requests,
        sessions=sessions,
        runs=runs,
        credits=credits,
    )


def run_demo(seed: int = 0) -> DemoResult:
    """Play the scripted day on a fresh in-process simulator and return its records."""
    return asyncio.run(_run(seed))
