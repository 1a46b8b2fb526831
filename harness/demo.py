"""``avatar-sim demo``: a scripted day, then the default scenario with a report (the showcase).

Why it exists: it is the first real job the project does for a user, and the smoke test of the
whole stack. It has two parts. The second runs the default scenario (``scenarios/default.yaml``: a
busy day for four organizations with a capacity loss) through the HTTP facade, showing its
progress, and writes ``report.md`` with PNG figures and the Parquet file of every table
(``harness.runner.report``). The first part is a scripted day: four organizations on different
plans use the service through the in-process HTTP facade (``httpx.AsyncClient`` over
``httpx.ASGITransport``, the same seam the conformance harness uses against a real URL), with the
manual clock moved through ``POST /_sim/clock/advance``. The day shows each behaviour a customer
meets: sessions ended by the client, by the idle timeout and by the max-duration ceiling; a create
refused by the per-key concurrency cap; the eleventh create in a minute refused by the rate limit;
a session failing ``no_capacity`` while the fleet is down (an admin fault); an idempotent retry; a
few runs; a run deletion on a plan that allows it and one that does not.

It prints a Markdown summary (sessions by final status, the refusals with their codes, credits per
organization) and writes it with the raw records (CSV and JSON) to ``--out``. Everything is on the
simulated clock and the seeded streams, so the same ``--seed`` gives byte-identical files. The
only thing read outside HTTP is the platform's event log (its columns), for each session's end
reason, which the contract carries only in the ``session.ended`` event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
from tqdm import tqdm

from harness.examples import example
from harness.runner.binding import binding_limits
from harness.runner.columns import to_frame
from harness.runner.metrics import summarize
from harness.runner.report import run_over_http, write_report
from harness.scenarios import ScenarioError, load_scenario
from sim.asgi.app import create_app
from sim.config import SimConfig
from sim.platform import Platform

__all__ = ["DemoResult", "add_arguments", "render_summary", "run", "run_demo", "write_outputs"]

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


# -- reporting -----------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return "" if value is None else str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def render_summary(result: DemoResult) -> str:
    """The Markdown summary printed to the terminal and written as ``summary.md``."""
    lines = [f"# avatar-sim demo: one simulated day (seed {result.seed})", ""]
    lines += ["## What happened", ""]
    lines += [f"- `{step.at}` **{step.org}** {step.what}" for step in result.steps]

    lines += ["", "## Sessions by final status", ""]
    by_status = Counter(s["status"] for s in result.sessions)
    lines += _table(["status", "sessions"], [[k, by_status[k]] for k in sorted(by_status)])
    lines += [""]
    lines += _table(
        ["organization", "session", "quality", "status", "end reason / error", "billable s"],
        [
            [
                s["org"],
                s["id"],
                s["quality"],
                s["status"],
                s["end_reason"] or s["error_code"],
                s["billable_seconds"],
            ]
            for s in result.sessions
            if s["quality"] != "mock"
        ],
    )
    mock = sum(1 for s in result.sessions if s["quality"] == "mock")
    lines += ["", f"({mock} mock-quality sessions of the retry loop are left out of the table.)"]

    lines += ["", "## Refusals and failures", ""]
    lines += _table(
        ["time", "organization", "request", "status", "code", "Retry-After"],
        [
            [r.at, r.org, f"{r.method} {r.path}", r.status, r.code, r.retry_after]
            for r in result.refusals
        ],
    )
    failed = [s for s in result.sessions if s["status"] == "failed"]
    lines += [""]
    lines += [f"- session {s['id']} of {s['org']} failed with `{s['error_code']}`" for s in failed]
    codes = Counter([r.code for r in result.refusals] + [s["error_code"] for s in failed])
    lines += ["", "Codes: " + ", ".join(f"`{c}` x{n}" for c, n in sorted(codes.items()))]

    lines += ["", "## Runs", ""]
    lines += _table(
        ["organization", "run", "model", "status", "credits charged", "deleted"],
        [
            [r["org"], r["id"], r["model"], r["status"], r["credits_charged"], r["deleted"]]
            for r in result.runs
        ],
    )

    lines += ["", "## Credits per organization (GET /v1/usage, GET /v1/billing/quota)", ""]
    lines += _table(
        ["organization", "plan", "credits charged", "billable s", "balance", "quota status"],
        [
            [
                c["org"],
                c["plan"],
                c["credits_charged"],
                c["billable_seconds"],
                c["balance_credits"],
                c["quota_status"],
            ]
            for c in result.credits
        ],
    )
    return "\n".join(lines) + "\n"


def write_outputs(result: DemoResult, out: Path) -> list[Path]:
    """Write ``summary.md``, one CSV per record kind and ``records.json``; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    frames = {
        "requests": pd.DataFrame([asdict(r) for r in result.requests]),
        "sessions": pd.DataFrame(result.sessions),
        "runs": pd.DataFrame(result.runs),
        "credits": pd.DataFrame(result.credits),
    }
    written = []
    summary = out / "summary.md"
    summary.write_text(render_summary(result), encoding="utf-8")
    written.append(summary)
    for name, frame in frames.items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False, lineterminator="\n")
        written.append(path)
    records = {
        "seed": result.seed,
        "steps": [asdict(s) for s in result.steps],
        "requests": [asdict(r) for r in result.requests],
        "sessions": result.sessions,
        "runs": result.runs,
        "credits": result.credits,
    }
    path = out / "records.json"
    path.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    written.append(path)
    return written


# -- the command ---------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Play a short scripted day on an in-process simulator through the HTTP facade, then run "
        "a scenario (default: a busy day with a capacity loss) through it and write a report "
        "with figures and Parquet tables."
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/demo"),
        help="directory for report.md, figures/, tables/, summary.md and the raw records "
        "(default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted day (default 0)")
    parser.add_argument(
        "--scenario",
        type=Path,
        default=None,
        help="scenario file of the report (default: the packaged scenarios/default.yaml)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario or example("scenarios", "default.yaml"))
    except ScenarioError as error:
        print(error, file=sys.stderr)
        return 2
    result = run_demo(args.seed)
    print(render_summary(result), end="")
    paths = write_outputs(result, args.out)
    print(f"\nWrote {', '.join(str(p) for p in paths)}\n")
    end = scenario.duration + scenario.cooldown
    with tqdm(
        total=round(end),
        desc=f"scenario {scenario.name}",
        unit="sim s",
        disable=args.no_progress,
        file=sys.stderr,
    ) as bar:
        outcome, requests = run_over_http(
            scenario, progress=lambda now: bar.update(round(now) - bar.n)
        )
    warnings = binding_limits(scenario, summarize(outcome, scenario.window()))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    written = write_report(
        outcome,
        scenario,
        args.out,
        requests=requests,
        scripted_day="summary.md",
        warnings=warnings,
        title="avatar-sim demo",
    )
    print(
        f"Scenario {scenario.name}: {len(outcome.sessions):,} sessions, {requests:,} HTTP requests"
    )
    print(f"Report: {written[0]} ({len(written) - 1} figures and tables beside it)")
    return 0
