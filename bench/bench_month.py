"""Benchmark: a 30-day month through ``run_scenario`` at production sizes, per records level.

Why: capacity and billing studies need production-sized months with replications, so what a
month costs in wall time and memory is the figure that matters. The month is
``bench.month.month_scenario`` (diurnal traffic from twenty organizations, talk-spurt audio, a
quality and surface mix, retries): about 100,000 sessions at every records level, and about
1,000,000 at ``summary``. Each run is a fresh subprocess, so its peak RSS (``ru_maxrss``) is
honest: nothing of another run or of the benchmark itself is counted, the interpreter and its
imports are. Reported per run: wall seconds (and its two phases, simulating and collecting the
tables), CPU seconds of the subprocess, peak RSS in MB (and the peak when simulating was done),
and the sessions the month created.

Goals (checked here, never in tests): the 100k month within 12 s and 800 MB at ``full``, the 1M
month within 120 s and 2 GB at ``summary``. ``--scale`` shrinks both sizes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from typing import Any

__all__ = ["run"]

GOALS: dict[str, dict[str, float]] = {
    "100k_full": {"wall_seconds": 12.0, "peak_rss_mb": 800.0},
    "1m_summary": {"wall_seconds": 120.0, "peak_rss_mb": 2048.0},
}


def month(sessions: int, records: str) -> dict[str, Any]:
    """Run one month in this process (the subprocess's job) and measure it: what
    ``run_scenario`` does, in its two phases (simulate, then collect the tables), so each
    phase's time and the memory after simulating are known apart."""
    from bench.month import month_scenario
    from harness.collect import collect
    from harness.runner import simulate

    scenario = month_scenario(sessions, records=records)
    wall, cpu = time.perf_counter(), time.process_time()
    raw = simulate(scenario)
    simulated = time.perf_counter()
    simulated_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = collect(raw, release=True)  # as ``run_scenario`` does
    done = time.perf_counter()
    return {
        "sessions": int(result.intervals["sessions_created"].sum()),
        "records": records,
        "wall_seconds": round(done - wall, 1),
        "simulate_seconds": round(simulated - wall, 1),
        "collect_seconds": round(done - simulated, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "simulate_peak_rss_mb": round(simulated_rss / 1024),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _in_subprocess(sessions: int, records: str) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.bench_month", str(sessions), records],
        capture_output=True,
        text=True,
        check=True,
    )
    report: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


def run(scale: float = 1.0) -> dict[str, Any]:
    small, large = max(500, int(100_000 * scale)), max(1_000, int(1_000_000 * scale))
    report: dict[str, Any] = {}
    for records in ("full", "sessions", "summary"):
        report[f"100k_{records}"] = _in_subprocess(small, records)
    report["1m_summary"] = _in_subprocess(large, "summary")
    for name, goal in GOALS.items():
        report[name]["goal"] = goal
        report[name]["meets_goal"] = all(report[name][k] <= v for k, v in goal.items())
    return report


if __name__ == "__main__":
    print(json.dumps(month(int(sys.argv[1]), sys.argv[2])))
