"""Benchmark: simulated sessions per wall second against bare SimPy running the same queue.

Why: DESIGN.md's cost model says the simulator's per-session cost must not grow with simulated
duration, and gives a yardstick: bare SimPy serving the same queue (c servers, Poisson arrivals,
a 15 s patience for a server). Both run here, in the same process and the same run, so the
report is a ratio that does not depend on how fast or busy the machine is:

- ``baseline``: bare SimPy, a ``Resource`` of c servers and one process per customer.
- ``platform``: the whole simulated service (``Platform.call("createSession")``: validation,
  caps, billing check, admission, worker boot, first frame, max-duration timer, usage charge).

A second measurement runs the same arrivals with sessions 60 times longer: the cost per session
should stay flat (``long_over_short`` near 1).
"""

from __future__ import annotations

import random
import time
from typing import Any

import simpy

from sim.config import Constant, SimConfig
from sim.platform import Platform

__all__ = ["run"]

_TRANSPORT = {"type": "livekit", "url": "wss://bench.example.test", "room_name": "bench"}


def _baseline(customers: int, workers: int, rate: float, hold: float, seed: int) -> float:
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=workers)
    rng = random.Random(seed)
    patience = 15.0

    def customer() -> Any:
        with servers.request() as request:
            result = yield request | env.timeout(patience)
            if request in result:
                yield env.timeout(hold)

    def source() -> Any:
        for _ in range(customers):
            env.process(customer())
            yield env.timeout(rng.expovariate(rate))

    env.process(source())
    started = time.perf_counter()
    env.run()
    return time.perf_counter() - started


def _platform(customers: int, workers: int, rate: float, hold: float, seed: int) -> float:
    config = SimConfig.model_validate(
        {
            "seed": seed,
            "scheduler": {
                "workers": workers,
                "worker_boot": Constant(value=1.0).model_dump(),
                "first_frame_latency": Constant(value=0.5).model_dump(),
                "max_queue_length": 10**6,
            },
            "limits": {
                "concurrent_sessions_per_key": 10**6,
                "concurrent_sessions_per_org_ceiling": 10**6,
                "max_duration_ceiling_seconds": 10**6,
                "idle_timeout_max_seconds": 10**6,
                "rate": {"session_creates_per_window": None},
            },
            "billing": {"signup_grant_usd": 10**6},
        }
    )
    platform = Platform.create(config)
    org = platform.admin.create_organization("Bench", "enterprise", concurrency_override=10**6)
    caller = platform.authenticate(f"Bearer {org['keys']['unrestricted']}")
    body = {
        "avatar_id": "av_stock_mock",
        "transport": _TRANSPORT,
        "quality": "mock",
        "max_duration_seconds": int(hold),
        "idle_timeout_seconds": int(hold) + 60,
    }
    rng = random.Random(seed)
    env = platform.clock.env

    def source() -> Any:
        for _ in range(customers):
            platform.call("createSession", caller, {"body": body})
            yield env.timeout(rng.expovariate(rate))

    env.process(source())
    # Billing's period process is perpetual, so run to a horizon: every arrival plus its session.
    horizon = customers / rate * 1.5 + hold * 2
    started = time.perf_counter()
    platform.clock.advance(horizon)
    elapsed = time.perf_counter() - started
    finished = sum(1 for s in platform.sessions.sessions() if s.status in ("ended", "failed"))
    if finished != customers:
        raise RuntimeError(f"only {finished} of {customers} sessions finished by the horizon")
    return elapsed


def run(scale: float = 1.0, *, seed: int = 0) -> dict[str, Any]:
    """Time both at the same load; report customers per second and the ratios."""
    customers = max(200, int(20_000 * scale))
    workers, hold = 40, 60.0
    rate = workers / hold * 0.9  # 90 % offered load
    baseline = _baseline(customers, workers, rate, hold, seed)
    short = _platform(customers, workers, rate, hold, seed)
    long = _platform(customers, workers, rate / 60, hold * 60, seed)
    return {
        "customers": customers,
        "baseline_per_second": round(customers / baseline),
        "platform_per_second": round(customers / short),
        "ratio_platform_over_baseline": round(baseline / short, 4),
        "long_over_short": round(long / short, 3),
    }
