"""A production-sized month as a scenario: ``month_scenario(sessions)`` for ``bench_month``.

Thirty days of office-hours traffic (a diurnal profile) from twenty organizations, with the
default talk-spurt audio, a quality and surface mix and polite retries, sized so that about
``sessions`` clients arrive; model runs arrive beside them (one for every twenty sessions, text
and speech), and each organization's usage is read in two timezones at the end, as the billing
studies read it. The worker pool grows with the traffic so the pool runs at roughly the same
load at any size (a little contention at the daily peak, idle nights), and credits are plentiful
so that billing never refuses a start: the month measures the simulator, not a customer running
out of money.
"""

from __future__ import annotations

import math
from typing import Any

from harness.scenarios import Scenario, parse_scenario

__all__ = ["DAYS", "ORGANIZATIONS", "PROFILE", "RUNS_PER_SESSION", "TIMEZONES", "month_scenario"]

DAYS = 30
ORGANIZATIONS = 20
#: Model runs per session client, and the share of them that are speech (the rest text).
RUNS_PER_SESSION, SPEECH_SHARE = 0.05, 0.3
#: The timezones each organization's usage summary is read in at the end of the month.
TIMEZONES: tuple[str, ...] = ("UTC", "America/New_York")
#: Hourly factors of the arrival rate (UTC); their mean is 1, so the base rate is the average.
_RAW = (0.2, 0.15, 0.1, 0.1, 0.1, 0.2, 0.4, 0.8, 1.3, 1.7, 1.9, 1.9,
        1.7, 1.8, 1.9, 1.8, 1.6, 1.3, 1.0, 0.8, 0.6, 0.5, 0.4, 0.3)  # fmt: skip
PROFILE: tuple[float, ...] = tuple(round(f * 24 / sum(_RAW), 6) for f in _RAW)
_MEAN_LENGTH = 180.0  # seconds, the lognormal below (median 150, sigma 0.6)


def month_scenario(
    sessions: int, *, records: str | None = None, seed: int = 1, days: int = DAYS
) -> Scenario:
    """A ``days``-day month in which about ``sessions`` session clients arrive."""
    rate = sessions / (days * 24.0)
    runs = rate * RUNS_PER_SESSION
    peak_erlangs = rate * max(PROFILE) * _MEAN_LENGTH / 3600.0
    workers = max(4, math.ceil(peak_erlangs * 1.15))
    per_org_peak = peak_erlangs / ORGANIZATIONS
    concurrency = 20  # the seed's ceiling; raised below when one organization needs more
    keys = max(20, math.ceil(per_org_peak * 3))
    data: dict[str, Any] = {
        "name": f"month_{sessions}",
        "description": f"{days} days, about {sessions} sessions",
        "seed": seed,
        "duration": f"{days}d",
        "cooldown": "1h",
        "sample_every": "5m",
        "config": {
            "scheduler": {"workers": workers, "max_queue_length": max(16, workers // 2)},
            "limits": {
                "concurrent_sessions_per_org_ceiling": max(concurrency, keys),
                "rate": {"session_creates_per_window": None},
            },
            "billing": {"signup_grant_usd": 1e9},
        },
        "organizations": [
            {
                "name": f"Org {i:02d}",
                "plan": "enterprise",
                "keys": min(keys, 100),
                "concurrency": max(concurrency, keys),
                "weight": 1 + (i % 4),
            }
            for i in range(ORGANIZATIONS)
        ],
        "arrivals": [{"kind": "diurnal", "base_rate_per_hour": rate, "profile": list(PROFILE)}],
        "runs": [
            {"model": "sim/echo-text", "rate_per_hour": runs * (1 - SPEECH_SHARE)},
            {"model": "sim/speech", "rate_per_hour": runs * SPEECH_SHARE, "characters": 300},
        ],
        "sessions": {
            "length": {"kind": "lognormal", "median": 150, "sigma": 0.6, "cap": 1800},
            "quality": {"standard": 6, "pro": 2, "lite": 1, "mock": 1},
            "surface": {"api": 6, "playground": 2, "embed": 1, "pipecat": 1},
        },
        "client": {"max_attempts": 3, "base_delay": "2s", "jitter": 0.1},
        "usage_timezones": list(TIMEZONES),
    }
    if records is not None:
        data["records"] = records
    return parse_scenario(data)
