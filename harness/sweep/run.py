"""``run_sweep``: every (grid point, replication) of a sweep, then per-point CIs (NB-3)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from harness.runner.binding import binding_limits
from harness.runner.metrics import CAUSES, format_value
from harness.scenarios.loader import parse_scenario
from harness.sweep.aggregate import METHODS, aggregate
from harness.sweep.execute import Task, run_local, run_on_dask
from harness.sweep.model import Point, Sweep, replication_seed

__all__ = ["SweepResult", "point_warnings", "run_sweep", "tasks_of"]


@dataclass(frozen=True)
class SweepResult:
    """``runs``: one row per (point, replication); ``summary``: one row per (point, metric)."""

    name: str
    params: tuple[str, ...]
    metrics: tuple[str, ...]
    runs: pd.DataFrame
    summary: pd.DataFrame

    def wide(self) -> pd.DataFrame:
        """One row per point: ``<metric>_mean``, ``_ci_low``, ``_ci_high``, ``_method`` and
        ``_n`` (replications)."""
        rows: dict[int, dict[str, Any]] = {}
        for record in self.summary.to_dict("records"):
            point = int(record["point"])
            row = rows.setdefault(point, {"point": point, **{p: record[p] for p in self.params}})
            for stat in ("mean", "ci_low", "ci_high", "method", "n"):
                row[f"{record['metric']}_{stat}"] = record[stat]
        return pd.DataFrame([rows[p] for p in sorted(rows)])

    def write(self, directory: str | Path) -> list[Path]:
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "runs.parquet", out / "summary.parquet"]
        self.runs.to_parquet(paths[0], index=False)
        self.summary.to_parquet(paths[1], index=False)
        return paths

    def markdown(self, warnings: Sequence[str] = ()) -> str:
        lines = [f"# Sweep `{self.name}`", ""]
        if warnings:
            lines += ["## Warnings", "", *(f"- {w}" for w in warnings), ""]
        lines += ["Estimates with 95 % confidence intervals:"]
        used = sorted(set(self.summary["method"])) if len(self.summary) else []
        lines += [f"- `{method}`: {METHODS[method]}" for method in used]
        header = [*self.params, "metric", "n", "estimate", "95 % CI", "method"]
        lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for values in self.summary.to_dict("records"):
            metric = str(values["metric"])
            low, high = (format_value(metric, values[k]) for k in ("ci_low", "ci_high"))
            cells = [str(values[p]) for p in self.params]
            cells += [metric, str(values["n"]), format_value(metric, values["mean"])]
            cells += [f"[{low}, {high}]", str(values["method"])]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"


def point_warnings(points: Sequence[Point], runs: pd.DataFrame) -> list[str]:
    """``harness.runner.binding.binding_limits`` of each point, over its replications: a point
    whose clients a cap, the rate limit or credits refused measures that limit, not the pool."""
    found = []
    counts = [f"refused_{cause}" for cause in CAUSES] + ["session_clients"]
    for point in points:
        rows = runs[runs["point"] == point.index]
        if rows.empty or not set(counts) <= set(rows.columns):
            continue
        totals = {name: float(rows[name].sum()) for name in counts}
        scenario = parse_scenario(point.scenario, f"grid point {point.index}")
        label = ", ".join(f"{k}={v!r}" for k, v in point.params.items()) or "the base scenario"
        found += [f"point {point.index} ({label}): {w}" for w in binding_limits(scenario, totals)]
    return found


def tasks_of(sweep: Sweep, points: list[Point], replications: int | None = None) -> list[Task]:
    count = sweep.replications if replications is None else replications
    return [
        Task(
            point=p.index,
            replication=r,
            seed=replication_seed(sweep.seed, r),
            params=p.params,
            scenario=p.scenario,
        )
        for p in points
        for r in range(count)
    ]


def run_sweep(
    sweep: Sweep,
    points: list[Point],
    *,
    replications: int | None = None,
    workers: int = 1,
    dask_client: Any = None,
    progress: bool = True,
    setup: Callable[[], None] | None = None,
) -> SweepResult:
    """Run every task on the process pool (``workers``, each calling ``setup`` first) or on
    ``dask_client`` when given."""
    tasks = tasks_of(sweep, points, replications)
    if dask_client is not None:
        rows = run_on_dask(tasks, dask_client, progress)
    else:
        rows = run_local(tasks, workers, progress, setup)
    params = tuple(sweep.grid)
    runs = pd.DataFrame(rows)
    summary = aggregate(runs, params, sweep.metrics)
    return SweepResult(sweep.name, params, sweep.metrics, runs, summary)
