"""Benchmark: what each fast path the simulator keeps saves a month (``bench.fast_paths``).

Why: a fast path costs every later change twice (the path and its reference), so it stays only
while it saves at least 1 % of a month. This runs a month (``bench.month.month_scenario`` at
``records: full``, simulated and collected as ``run_scenario`` does) with every fast path, and
once with each one's reference in its place, in rounds, in one fresh interpreter. A fast path's
gain is the month's CPU time with its reference over the time with it, minus one: the median
over the rounds of each round's ratio, with the smallest and largest. The machine is shared,
so a gain near 1 % is within the noise of a round; the instruction counts behind the decisions
to keep or delete (valgrind, which is not a dependency) are in the commits that made them.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from typing import Any

from bench.child import report_of_child

__all__ = ["run"]

#: A fast path is kept while it saves at least this share of a month.
GAIN_GOAL = 0.01


def _month_seconds(sessions: int) -> float:
    """CPU seconds of one month of about ``sessions`` sessions: simulated, then collected."""
    from bench.month import month_scenario
    from harness.runner import simulate
    from harness.runner.tables import collect

    scenario = month_scenario(sessions, records="full")
    gc.collect()
    started = time.process_time()
    collect(simulate(scenario), release=True)
    return time.process_time() - started


def measure(sessions: int, rounds: int) -> dict[str, list[float]]:
    """Each round: the month with every fast path, then with each reference in turn."""
    from bench.fast_paths import FAST_PATHS, referenced

    times: dict[str, list[float]] = {"fast": [], **{path.name: [] for path in FAST_PATHS}}
    _month_seconds(sessions)  # warm-up: imports and first-use caches out of the rounds
    for _ in range(rounds):
        times["fast"].append(_month_seconds(sessions))
        for path in FAST_PATHS:
            with referenced(path):
                times[path.name].append(_month_seconds(sessions))
    return times


def gains(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Per fast path: the median, smallest and largest of each round's saving."""
    out = {}
    for name, seconds in times.items():
        if name == "fast":
            continue
        ratios = [
            reference / fast - 1 for reference, fast in zip(seconds, times["fast"], strict=True)
        ]
        out[name] = {
            "gain": round(statistics.median(ratios), 4),
            "smallest": round(min(ratios), 4),
            "largest": round(max(ratios), 4),
        }
    return out


def run(scale: float = 1.0, *, rounds: int | None = None) -> dict[str, Any]:
    """Measure in a fresh interpreter (nothing of another benchmark in it); judge each gain."""
    from bench.fast_paths import FAST_PATHS

    sessions = max(300, int(8_000 * scale))
    rounds = rounds if rounds is not None else (5 if scale >= 0.5 else 1)
    measured = gains(
        report_of_child(
            "bench.bench_fast_paths", str(sessions), str(rounds), what="the fast paths' months"
        )
    )
    what = {path.name: path.what for path in FAST_PATHS}
    return {
        "sessions": sessions,
        "rounds": rounds,
        "fast_paths": {name: {**gain, "what": what[name]} for name, gain in measured.items()},
        "verdicts": [
            {
                "figure": (
                    f"{name} saves {gain['gain']:.1%} of a month ({rounds} rounds: "
                    f"{gain['smallest']:.1%} to {gain['largest']:.1%})"
                ),
                "goal": f">= {GAIN_GOAL:.0%}",
                "met": gain["gain"] >= GAIN_GOAL,
            }
            for name, gain in measured.items()
        ],
    }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]), int(sys.argv[2]))))
