"""Benchmark: simulated sessions per wall second against bare SimPy running the same queue.

Why: the cost model says the simulator's per-session cost must not grow with simulated duration,
and gives a yardstick: bare SimPy serving the same queue (c servers, Poisson arrivals, a 15 s
patience for a server). Both run here, in the same process, so the report is a ratio that does
not depend on how fast the machine is:

- ``baseline``: bare SimPy, a ``Resource`` of c servers and one process per customer.
- ``platform``: the whole simulated service (``Platform.call("createSession")``: validation,
  caps, billing check, admission, worker boot, first frame, max-duration timer, usage charge).
- ``platform`` with audio: each customer also talks, handing its talk-spurt pattern to the
  session at the first frame (one ``play_audio`` call), as the scenario runner's clients do.

Each is also run with sessions 60 times longer at the same load: the cost per session should
stay flat (``long_over_short`` near 1), with audio too. The machine is shared, so times are the
process's CPU time (``time.process_time``: what this process spent, not what others took), the
runs are interleaved in rounds, and each figure is the median over the rounds (ratios per round
first).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import simpy

from sim.config import SimConfig
from sim.distributions import Constant, Exponential
from sim.events import Event
from sim.platform import Platform
from sim.sessions.audio import TalkSpurts

__all__ = ["baseline_queue", "run"]

#: The queue every variant serves: 40 servers, 60 s sessions, 90 % offered load.
WORKERS, HOLD, LOAD = 40, 60.0, 0.9
RATE = WORKERS / HOLD * LOAD  # arrivals per second
#: The goals, judged by ``run``: the platform at least 0.28 of bare SimPy's rate, and a
#: session's cost with audio on at most 10 % more when it lasts 60 times longer.
RATIO_GOAL, LONG_OVER_SHORT_GOAL = 0.28, 1.1

_TRANSPORT = {"type": "livekit", "url": "wss://bench.example.test", "room_name": "bench"}
#: The scenario format's default talk-spurt pattern.
_TALK = TalkSpurts(speech=Exponential(mean_value=4.0), silence=Exponential(mean_value=2.0))


def _baseline(
    customers: int,
    workers: int,
    rate: float,
    hold: float,
    seed: int,
    *,
    clock: Callable[[], float] = time.process_time,
) -> float:
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
    started = clock()
    env.run()
    return clock() - started


def baseline_queue(
    customers: int, *, seed: int = 0, clock: Callable[[], float] = time.process_time
) -> float:
    """Seconds (by ``clock``) bare SimPy takes to serve ``customers`` on the benchmark's queue:
    the yardstick this benchmark divides by, and ``bench.reference``'s machine speed."""
    return _baseline(customers, WORKERS, RATE, HOLD, seed, clock=clock)


def _platform(
    customers: int, workers: int, rate: float, hold: float, seed: int, *, audio: bool = False
) -> float:
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
    if audio:
        talk = random.Random(seed + 1)

        def talks(event: Event) -> None:  # the customer starts talking at its first frame
            assert event.subject is not None
            until = event.at + hold
            platform.sessions.play_audio(event.subject, _TALK, rng=talk, until=until)

        platform.kernel.events.subscribe(talks, types=("session.first_frame",))

    def source() -> Any:
        for _ in range(customers):
            platform.call("createSession", caller, {"body": body})
            yield env.timeout(rng.expovariate(rate))

    env.process(source())
    # Billing's period process is perpetual, so run to a horizon: every arrival plus its session.
    horizon = customers / rate * 1.5 + hold * 2
    started = time.process_time()
    platform.clock.advance(horizon)
    elapsed = time.process_time() - started
    store = platform.sessions.store
    finished = sum(1 for row in range(len(store)) if store.status(row) in ("ended", "failed"))
    if finished != customers:
        raise RuntimeError(f"only {finished} of {customers} sessions finished by the horizon")
    return elapsed


def run(scale: float = 1.0, *, seed: int = 0, rounds: int | None = None) -> dict[str, Any]:
    """Time every variant at the same load in interleaved rounds; report medians and ratios."""
    customers = max(200, int(6_000 * scale))
    rounds = rounds if rounds is not None else (5 if scale >= 0.5 else 1)
    workers, hold, rate = WORKERS, HOLD, RATE
    times: dict[str, list[float]] = {
        k: [] for k in ("baseline", "short", "long", "audio_short", "audio_long")
    }
    for round_ in range(rounds):
        run_seed = seed + round_
        times["baseline"].append(_baseline(customers, workers, rate, hold, run_seed))
        times["short"].append(_platform(customers, workers, rate, hold, run_seed))
        times["long"].append(_platform(customers, workers, rate / 60, hold * 60, run_seed))
        times["audio_short"].append(_platform(customers, workers, rate, hold, run_seed, audio=True))
        times["audio_long"].append(
            _platform(customers, workers, rate / 60, hold * 60, run_seed, audio=True)
        )

    def median_ratio(numerator: str, denominator: str) -> float:
        pairs = zip(times[numerator], times[denominator], strict=True)
        return round(statistics.median(n / d for n, d in pairs), 4)

    def per_second(name: str) -> int:
        return round(customers / statistics.median(times[name]))

    ratio, long_over_short = (
        median_ratio("baseline", "short"),
        median_ratio("audio_long", "audio_short"),
    )
    return {
        "customers": customers,
        "rounds": rounds,
        "baseline_per_second": per_second("baseline"),
        "platform_per_second": per_second("short"),
        "platform_audio_per_second": per_second("audio_short"),
        "ratio_platform_over_baseline": ratio,
        "ratio_platform_audio_over_baseline": median_ratio("baseline", "audio_short"),
        "long_over_short": median_ratio("long", "short"),
        "long_over_short_audio": long_over_short,
        "goals": {
            "ratio_platform_over_baseline": f">= {RATIO_GOAL}",
            "long_over_short_audio": f"<= {LONG_OVER_SHORT_GOAL}",
        },
        "verdicts": [
            {
                "figure": f"platform / bare SimPy, audio off: {ratio}",
                "goal": f">= {RATIO_GOAL}",
                "met": ratio >= RATIO_GOAL,
            },
            {
                "figure": f"sessions 60x longer over short, audio on: {long_over_short}",
                "goal": f"<= {LONG_OVER_SHORT_GOAL}",
                "met": long_over_short <= LONG_OVER_SHORT_GOAL,
            },
        ],
    }
