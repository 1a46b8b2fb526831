"""Running a sweep's (point, replication) tasks, or any batch of simulations (a planner's): in
process, on a local process pool, or on a Dask cluster, with one progress bar (``Runner``).

Why one plain top-level task function over plain data: the same function pickles to a
``ProcessPoolExecutor`` worker and to a Dask worker, and it carries the scenario as data, so a
remote worker needs nothing but the installed package. Results are put back in (point,
replication) order whatever order they finish in, so the executor never changes the tables.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tqdm import tqdm

from harness.runner import run_scenario
from harness.runner.metrics import summarize
from harness.scenarios.loader import parse_scenario

__all__ = [
    "DaskUnreachable",
    "Runner",
    "Task",
    "add_runner_arguments",
    "connect_dask",
    "open_runner",
    "progress_bar",
    "run_local",
    "run_on_dask",
    "run_serial",
    "run_task",
]

R = TypeVar("R")


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


def progress_bar(total: int | None, progress: bool, desc: str = "sweep", unit: str = "run") -> Any:
    """The progress bar every simulating command shows (``tqdm`` on standard error), or none."""
    if not progress:
        return _Silent()
    return tqdm(total=total, desc=desc, unit=unit, leave=False)


class Runner:
    """Maps a picklable top-level function over tasks: in this process, on a local process pool
    it keeps open across batches (a planner runs hundreds of small batches, and starting a pool
    of spawned processes for each would cost more than the batch), or on a Dask cluster.
    ``open_runner`` makes one."""

    def __init__(self, pool: ProcessPoolExecutor | None = None, client: Any = None) -> None:
        self._pool = pool
        self._client = client

    def map(
        self,
        work: Callable[[Any], R],
        tasks: Sequence[Any],
        *,
        progress: bool = False,
        desc: str = "sweep",
    ) -> list[R]:
        """``work`` of every task, in the tasks' order whatever order they finish in."""
        with progress_bar(len(tasks), progress, desc) as bar:
            if self._client is not None:
                from distributed import as_completed as _dask_completed

                dask_completed = cast(Callable[[list[Any]], Iterable[Any]], _dask_completed)
                futures = self._client.map(work, list(tasks), pure=False)
                for _done in dask_completed(futures):
                    bar.update(1)
                return [future.result() for future in futures]
            if self._pool is not None:
                submitted = [self._pool.submit(work, task) for task in tasks]
                for _done in as_completed(submitted):
                    bar.update(1)
                return [future.result() for future in submitted]
            results = []
            for task in tasks:
                results.append(work(task))
                bar.update(1)
            return results


@contextmanager
def open_runner(
    workers: int = 1,
    *,
    dask_client: Any = None,
    setup: Callable[[], None] | None = None,
) -> Iterator[Runner]:
    """A ``Runner`` on ``dask_client`` when given, else on a local pool of ``workers`` spawned
    processes (no fork of a threaded parent), each of which calls ``setup`` first (a
    process-wide choice of the caller's, made in the processes it starts; a picklable top-level
    function), else (one worker) in this process. The pool is shut down on leaving."""
    if dask_client is not None:
        yield Runner(client=dask_client)
    elif workers <= 1:
        yield Runner()
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=context, initializer=setup
        ) as pool:
            yield Runner(pool=pool)


def run_serial(tasks: Sequence[Task], progress: bool = True) -> list[dict[str, Any]]:
    return _ordered(Runner().map(run_task, tasks, progress=progress))


def run_local(
    tasks: Sequence[Task],
    workers: int,
    progress: bool = True,
    setup: Callable[[], None] | None = None,
) -> list[dict[str, Any]]:
    """On a local process pool of ``workers`` processes (``open_runner``)."""
    with open_runner(workers, setup=setup) as runner:
        return _ordered(runner.map(run_task, tasks, progress=progress))


def run_on_dask(tasks: Sequence[Task], client: Any, progress: bool = True) -> list[dict[str, Any]]:
    """On a Dask cluster through ``client`` (a ``distributed.Client``)."""
    with open_runner(dask_client=client) as runner:
        return _ordered(runner.map(run_task, tasks, progress=progress))


class DaskUnreachable(RuntimeError):
    """The Dask scheduler a command was given does not answer (a usage error: exit 2)."""


def add_runner_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a command that runs batches of simulations: where they run (``--workers``
    local processes, or the Dask scheduler at ``--dask``) and ``--no-progress``."""
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="local worker processes"
    )
    parser.add_argument("--dask", metavar="ADDRESS", default=None, help="Dask scheduler address")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def connect_dask(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (the ``[dask]`` extra), or
    ``DaskUnreachable`` saying so within ten seconds."""
    import distributed

    try:
        return distributed.Client(address, timeout="10s")  # type: ignore[no-untyped-call]
    except OSError as error:
        raise DaskUnreachable(f"cannot reach the Dask scheduler at {address}: {error}") from None
