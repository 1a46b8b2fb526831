"""Running a sweep's (point, replication) tasks: a local process pool, or a Dask cluster.

Why one plain top-level task function over plain data: the same function pickles to a
``ProcessPoolExecutor`` worker and to a Dask worker, and it carries the scenario as data, so a
remote worker needs nothing but the installed package. Results are put back in (point,
replication) order whatever order they finish in, so the executor never changes the tables.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, cast

from tqdm import tqdm

from harness.runner import run_scenario
from harness.runner.metrics import summarize
from harness.scenarios.loader import parse_scenario

__all__ = ["Task", "run_local", "run_on_dask", "run_serial", "run_task"]


@dataclass(frozen=True, slots=True)
class Task:
    point: int
    replication: int
    seed: int
    params: dict[str, Any]
    scenario: dict[str, Any]


def run_task(task: Task) -> dict[str, Any]:
    """One replication of one point: its parameters, seed and every metric (one flat row)."""
    scenario = parse_scenario(task.scenario, f"grid point {task.point}")
    metrics = summarize(run_scenario(scenario, seed=task.seed), scenario.window())
    return {
        "point": task.point,
        "replication": task.replication,
        "seed": task.seed,
        **task.params,
        **metrics,
    }


def _ordered(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["point"], r["replication"]))


class _Silent:
    """The progress bar of a run that shows none (a ``tqdm``, even disabled, starts a thread)."""

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def update(self, _count: int) -> None:
        return None


def _bar(total: int, progress: bool) -> Any:
    if not progress:
        return _Silent()
    return tqdm(total=total, desc="sweep", unit="run", leave=False)


def run_serial(tasks: Sequence[Task], progress: bool = True) -> list[dict[str, Any]]:
    rows = []
    with _bar(len(tasks), progress) as bar:
        for task in tasks:
            rows.append(run_task(task))
            bar.update(1)
    return _ordered(rows)


def run_local(
    tasks: Sequence[Task],
    workers: int,
    progress: bool = True,
    setup: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """On a local process pool of ``workers`` processes (spawned: no fork of a threaded parent),
    each of which calls ``setup`` first (a process-wide choice of the caller's, made in the
    processes it starts; a picklable top-level function)."""
    if workers <= 1:
        return run_serial(tasks, progress)
    context = multiprocessing.get_context("spawn")
    rows = []
    with (
        ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=setup) as pool,
        _bar(len(tasks), progress) as bar,
    ):
        futures = [pool.submit(run_task, task) for task in tasks]
        for future in as_completed(futures):
            rows.append(future.result())
            bar.update(1)
    return _ordered(rows)


def run_on_dask(tasks: Sequence[Task], client: Any, progress: bool = True) -> list[dict[str, Any]]:
    """On a Dask cluster through ``client`` (a ``distributed.Client``)."""
    from distributed import as_completed as _dask_completed

    dask_completed = cast(Callable[[list[Any]], Iterable[Any]], _dask_completed)

    futures = client.map(run_task, list(tasks), pure=False)
    rows = []
    with _bar(len(tasks), progress) as bar:
        for future in dask_completed(futures):
            rows.append(future.result())
            bar.update(1)
    return _ordered(rows)
