"""Benchmark: a 30-day month through ``run_scenario`` at production sizes, per records level.

Why: capacity and billing studies need production-sized months with replications, so what a
month costs in wall time and memory is the figure that matters. The month is
``bench.month.month_scenario`` (diurnal traffic from twenty organizations, talk-spurt audio, a
quality and surface mix, retries, model runs, usage read in two timezones): about 100,000
sessions at every records level, and about 1,000,000 at ``summary``. Each run is a fresh
subprocess, so its peak RSS (``ru_maxrss``) is honest: nothing of another run or of the
benchmark itself is counted, the interpreter and its imports are. Reported per run: wall seconds
(and its two phases, simulating and collecting the tables), CPU seconds of the subprocess, peak
RSS in MB (and the peak when simulating was done),
the sessions the month created, and its rate over the yardstick's (sessions per wall second
over bare SimPy's customers per wall second, ``rate_over_yardstick``: what moves when the
simulator's cost per session does, whatever the machine).

Goals (checked here, never in tests): the 100k month within 12 s and 600 MB at ``full``, the 1M
month within 120 s and 1 GB at ``summary``, and each of those two no slower over the yardstick
than step one's base (``BASE_RATE_OVER_YARDSTICK``). The seconds are the reference machine's,
the one the goals were set on (``bench.reference``): bare SimPy is timed on the benchmark's queue
before and after every month, and a month's wall time here is scaled by how fast this machine ran
it against the reference. Each goal's report keeps both: ``reference_wall_seconds`` and
``meets_goal`` (judged on the scaled time, with the scaling's uncertainty added: met only if it is
met by that margin), ``wall_seconds`` and ``meets_goal_here`` (the seconds as measured here).
Memory does not depend on the machine's speed and is judged as measured. ``--scale`` shrinks both
sizes.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.child import report_of_child
from bench.reference import (
    REFERENCE_CUSTOMERS_PER_SECOND,
    SCALING_UNCERTAINTY,
    on_reference,
    yardstick,
)

__all__ = ["run"]

GOALS: dict[str, dict[str, float]] = {
    "100k_full": {"wall_seconds": 12.0, "peak_rss_mb": 600.0},
    "1m_summary": {"wall_seconds": 120.0, "peak_rss_mb": 1024.0},
}

#: Step one's base (commit cb091dd) on this month (model runs, usage read in two timezones): each
#: month's sessions per second over the yardstick's customers per second, that tree run on
#: ``bench.month`` with this tree alternated in one sitting (the rounds and the method are in
#: ``bench/results/2026-11-28T152704Z-step-one-base.json``). The month gained its runs and its
#: second timezone after step one, so the rates measured on the month before them (0.115, 0.130)
#: compare another workload. A month must be no slower than that; both rates are measured here,
#: so the machine divides out.
BASE_RATE_OVER_YARDSTICK: dict[str, float] = {"100k_full": 0.1048, "1m_summary": 0.1257}


def month(sessions: int, records: str) -> dict[str, Any]:
    """Run one month in this process (the subprocess's job) and measure it: what
    ``run_scenario`` does, in its two phases (simulate, then collect the tables), so each
    phase's time and the memory after simulating are known apart."""
    from bench.month import month_scenario
    from harness.gc_policy import collect_rarely
    from harness.runner import simulate
    from harness.runner.tables import collect

    scenario = month_scenario(sessions, records=records)
    collect_rarely()  # as ``avatar-sim run`` does: this subprocess is the benchmark's
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
    """One month in a fresh interpreter; if it fails, the error says which month and ends with
    what the subprocess wrote to stderr (its traceback), not only its exit status."""
    return report_of_child(
        "bench.bench_month", str(sessions), records,
        what=f"the month of {sessions} sessions at records={records!r}",
    )  # fmt: skip


def judge(report: dict[str, Any], speeds: list[float]) -> None:
    """Add to each goal's month its time on the reference machine and whether it met its goal,
    scaled (``meets_goal``) and as measured here (``meets_goal_here``); add the yardstick."""
    report["yardstick"] = {
        "customers_per_second": round(statistics.median(speeds)),
        "runs": len(speeds),
        "reference_customers_per_second": round(REFERENCE_CUSTOMERS_PER_SECOND),
        "machine_over_reference": round(on_reference(1.0, speeds), 3),  # one second, scaled
    }
    rate = statistics.median(speeds)
    for month_ in report.values():
        if isinstance(month_, dict) and month_.get("wall_seconds", 0) > 0:
            month_["rate_over_yardstick"] = round(
                month_["sessions"] / month_["wall_seconds"] / rate, 4
            )
    for name, goal in GOALS.items():
        month_ = report[name]
        scaled = on_reference(month_["wall_seconds"], speeds)
        fits = month_["peak_rss_mb"] <= goal["peak_rss_mb"]
        month_["reference_wall_seconds"] = round(scaled, 1)
        month_["goal"] = goal
        month_["meets_goal"] = fits and scaled * (1 + SCALING_UNCERTAINTY) <= goal["wall_seconds"]
        month_["meets_goal_here"] = fits and month_["wall_seconds"] <= goal["wall_seconds"]
        report.setdefault("verdicts", []).append(
            {
                "figure": (
                    f"{name}: {month_['reference_wall_seconds']} s "
                    f"(±{SCALING_UNCERTAINTY:.0%}) on the reference "
                    f"({month_['wall_seconds']} s here), {month_['peak_rss_mb']} MB"
                ),
                "goal": f"<= {goal['wall_seconds']:g} s, <= {goal['peak_rss_mb']:g} MB",
                "met": month_["meets_goal"],
            }
        )
    for name, base in BASE_RATE_OVER_YARDSTICK.items():
        rate_ = report[name]["rate_over_yardstick"]
        report["verdicts"].append(
            {
                "figure": f"{name}: {rate_:.4f} sessions a second per yardstick customer a second",
                "goal": f">= {base:.4f}, step one's base",
                "met": rate_ >= base,
            }
        )


def run(
    scale: float = 1.0,
    *,
    measure: Callable[[int, str], dict[str, Any]] | None = None,
    speed: Callable[[], list[float]] | None = None,
) -> dict[str, Any]:
    """Every month in its own subprocess, the yardstick timed before and after each, judged.
    ``measure`` and ``speed`` stand in for the subprocess and the yardstick in tests."""
    measure = measure or _in_subprocess
    speed = speed or yardstick
    small, large = max(500, int(100_000 * scale)), max(1_000, int(1_000_000 * scale))
    report: dict[str, Any] = {}
    speeds = speed()
    for records in ("full", "sessions", "summary"):
        report[f"100k_{records}"] = measure(small, records)
        speeds += speed()
    report["1m_summary"] = measure(large, "summary")
    speeds += speed()
    judge(report, speeds)
    return report


if __name__ == "__main__":
    print(json.dumps(month(int(sys.argv[1]), sys.argv[2])))
