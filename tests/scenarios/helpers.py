"""Small scenarios shared by the scenario, runner and sweep tests."""

from __future__ import annotations

from typing import Any

from harness.scenarios import Scenario, parse_scenario


def small(**overrides: Any) -> dict[str, Any]:
    """A 20-minute, two-organization scenario as data (fast: well under a second)."""
    data: dict[str, Any] = {
        "name": "small",
        "seed": 3,
        "duration": "20m",
        "cooldown": "5m",
        "sample_every": "1m",
        "config": {"scheduler": {"workers": 3}},
        "organizations": [
            {"name": "Acme", "plan": "enterprise", "keys": 3, "weight": 2},
            {"name": "Bistro", "plan": "pro", "keys": 2},
        ],
        "arrivals": [
            {"kind": "poisson", "rate_per_hour": 40},
            {"kind": "burst", "organization": "Acme", "at": "5m", "count": 4, "within": "30s"},
        ],
        "sessions": {
            "length": {"kind": "exponential", "mean": 120},
            "quality": {"standard": 3, "pro": 1, "mock": 1},
            "surface": {"api": 3, "playground": 1, "pipecat": 1},
        },
        "client": {"max_attempts": 3, "base_delay": "2s", "jitter": 0.1},
        "runs": [{"model": "sim/echo-text", "rate_per_hour": 12}],
        "usage_timezones": ["UTC", "Asia/Tokyo"],
    }
    data.update(overrides)
    return data


def scenario(**overrides: Any) -> Scenario:
    return parse_scenario(small(**overrides))
