"""Benchmark: a served simulator's request rate over five minutes of runs and usage reads.

Why: ``avatar-sim serve`` runs for hours while its organizations' history grows; a request whose
cost grows with that history (a usage summary that reads every row of the month) makes the
server slower minute by minute. This starts ``avatar-sim serve`` on a real port (a scenario
with four enterprise organizations, no rate limit on run creates and room for every run, on a
clock twenty times faster than the wall's, so runs settle within a wall second or so) and
drives it for ``300 * scale`` wall seconds from ``CLIENTS`` concurrent clients, each creating a
run (``POST /v1/run/sim/echo-text``) and reading its organization's usage of the month
(``GET /v1/usage``) in turn. It counts the answers per fifth of the run (a minute at full scale)
and reports each fifth's rate.

Goal (judged here, never in tests): every later fifth's rate within 20 % of the first's (PERF-5:
the first fifth is the baseline, measured in the same run). A shared machine's other work moves
the rate too, so the server's CPU time per answer in each fifth is reported and judged as well
(Linux only): what a request costs the server, whatever else runs. At full scale this benchmark
takes its five minutes of ``make bench``; ``--scale`` shortens it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

__all__ = ["CLIENTS", "RATE_GOAL", "judge", "run"]

CLIENTS = 32
#: Every later fifth's rate at least this share of the first fifth's.
RATE_GOAL = 0.8
_ORGANIZATIONS = 4
_STARTUP_SECONDS = 60.0
#: Wall seconds per simulated second: runs finish (and settle) within a few wall seconds.
_FACTOR = "0.05"
_SCENARIO = {
    "name": "served_bench",
    "seed": 1,
    "duration": "30d",
    "config": {
        "limits": {"rate": {"run_creates_per_window": None}},
        "runs": {"run_workers": 256, "max_queued_runs_per_org": 100_000},
        "billing": {"signup_grant_usd": 1e9},
    },
    "organizations": [
        {"name": f"Bench {i}", "plan": "enterprise", "keys": 1} for i in range(_ORGANIZATIONS)
    ],
}


def _serve(workdir: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """``avatar-sim serve`` on a free port with the benchmark's scenario; its keys document."""
    scenario, keys = workdir / "scenario.json", workdir / "keys.json"
    scenario.write_text(json.dumps(_SCENARIO), encoding="utf-8")
    command = [sys.executable, "-m", "harness", "serve", "--host", "127.0.0.1", "--port", "0"]
    command += ["--scenario", str(scenario), "--keys-out", str(keys), "--time-factor", _FACTOR]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + _STARTUP_SECONDS
    while not keys.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            _, err = process.communicate()
            raise RuntimeError(f"avatar-sim serve did not start: {err.decode()[-2000:]}")
        time.sleep(0.05)
    return process, json.loads(keys.read_text(encoding="utf-8"))


def _cpu_seconds(pid: int) -> float | None:
    """The CPU seconds process ``pid`` has used (Linux's ``/proc``; ``None`` elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drive(
    base_url: str, keys: list[str], seconds: float, pid: int
) -> tuple[list[tuple[float, int]], list[float | None]]:
    """Every answer's (wall seconds since the start, status), from ``CLIENTS`` clients, and the
    server's CPU seconds at the end of each fifth of the run."""
    answers: list[tuple[float, int]] = []
    cpu: list[float | None] = []
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits) as http:
        started = time.monotonic()

        async def client(number: int) -> None:
            auth = {"Authorization": f"Bearer {keys[number % len(keys)]}"}
            body = {"input": {"prompt": f"client {number}"}}
            requests = (("POST", "/v1/run/sim/echo-text"), ("GET", "/v1/usage"))
            while time.monotonic() - started < seconds:
                for method, path in requests:
                    try:
                        response = await http.request(
                            method, path, json=body if method == "POST" else None, headers=auth
                        )
                        status = response.status_code
                    except httpx.HTTPError:  # no answer: counted, not retried at once
                        status = 0
                        await asyncio.sleep(0.1)
                    answers.append((time.monotonic() - started, status))

        async def sample() -> None:
            cpu.append(_cpu_seconds(pid))
            for fifth in range(1, 6):
                await asyncio.sleep(max(0.0, started + seconds * fifth / 5 - time.monotonic()))
                cpu.append(_cpu_seconds(pid))

        await asyncio.gather(sample(), *(client(number) for number in range(CLIENTS)))
    return answers, cpu


def run(scale: float = 1.0) -> dict[str, Any]:
    """Serve, drive for ``300 * scale`` seconds, report each fifth's rate and judge them."""
    seconds = max(10.0, 300.0 * scale)
    with tempfile.TemporaryDirectory() as directory:
        process, document = _serve(Path(directory))
        try:
            keys = [org["keys"]["unrestricted"] for org in document["organizations"]]
            answers, cpu = asyncio.run(_drive(document["base_url"], keys, seconds, process.pid))
        finally:
            process.terminate()
            process.communicate(timeout=30)
    return judge(answers, seconds, cpu)


def judge(
    answers: list[tuple[float, int]], seconds: float, cpu: list[float | None] | None = None
) -> dict[str, Any]:
    """The answers' rate in each fifth of ``seconds`` (a request that got no answer, status 0,
    is counted apart) and the verdict: the slowest later fifth against the first. ``cpu``: the
    server's CPU seconds at the start and the end of each fifth, reported and judged as CPU
    milliseconds per answer in each (what a request costs the server, whatever else runs)."""
    fifth = seconds / 5
    counts = [0] * 5
    statuses: dict[str, int] = {}
    for at, status in answers:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        if status:
            counts[min(4, int(at // fifth))] += 1
    rates = [round(count / fifth, 1) for count in counts]
    worst = min(rates[1:]) / rates[0] if rates[0] else 0.0
    verdicts = [
        {
            "figure": (
                f"served, runs and usage reads for {seconds:g} s: the slowest later fifth at "
                f"{worst:.2f} of the first's {rates[0]:g} requests/s"
            ),
            "goal": f">= {RATE_GOAL}",
            "met": worst >= RATE_GOAL,
        }
    ]
    per_answer: list[float] | None = None
    known = [value for value in cpu or () if value is not None]
    if len(known) == 6 and all(counts):
        spent = [after - before for before, after in itertools.pairwise(known)]
        per_answer = [round(1000 * s / c, 3) for s, c in zip(spent, counts, strict=True)]
        costliest = max(per_answer[1:]) / per_answer[0] if per_answer[0] else math.inf
        verdicts.append(
            {
                "figure": (
                    "served: the costliest later fifth's server CPU per answer at "
                    f"{costliest:.2f} of the first's {per_answer[0]:g} ms"
                ),
                "goal": f"<= {1 / RATE_GOAL:g}",
                "met": costliest <= 1 / RATE_GOAL,
            }
        )
    return {
        "seconds": seconds,
        "clients": CLIENTS,
        "organizations": _ORGANIZATIONS,
        "requests": len(answers),
        "statuses": statuses,
        "requests_per_second_by_fifth": rates,
        "server_cpu_ms_per_answer_by_fifth": per_answer,
        "worst_fifth_over_first": round(worst, 3),
        "verdicts": verdicts,
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(run(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0), indent=2))
