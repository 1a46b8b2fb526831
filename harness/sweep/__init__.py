"""Parameter sweeps with replications and confidence intervals (NB-3)."""

from __future__ import annotations

from harness.sweep.aggregate import (
    CONFIDENCE,
    METHODS,
    aggregate,
    clip,
    t_interval,
    wilson_interval,
)
from harness.sweep.execute import Task, run_local, run_on_dask, run_serial, run_task
from harness.sweep.model import Point, Sweep, load_sweep, parse_sweep, replication_seed, set_path
from harness.sweep.run import SweepResult, run_sweep, tasks_of

__all__ = [
    "CONFIDENCE",
    "METHODS",
    "Point",
    "Sweep",
    "SweepResult",
    "Task",
    "aggregate",
    "clip",
    "load_sweep",
    "parse_sweep",
    "replication_seed",
    "run_local",
    "run_on_dask",
    "run_serial",
    "run_sweep",
    "run_task",
    "set_path",
    "t_interval",
    "tasks_of",
    "wilson_interval",
]
