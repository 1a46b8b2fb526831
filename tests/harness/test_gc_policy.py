"""Process-wide policy belongs to the caller (NB-2, NB-3).

No library call (``simulate``, ``collect``, ``run_scenario``, a sweep's tasks) changes the cycle
collector's thresholds or state, starts a thread, or leaves the process otherwise than it found
it, also when several run at once in threads (a threaded Dask worker). The command line chooses
rare collections for the commands that simulate (``harness.gc_policy``), and a sweep's worker
processes choose them through the setup the command hands them.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import harness.runner.command as run_command
from harness.cli import main
from harness.gc_policy import YOUNG_COLLECTION_THRESHOLD, collect_rarely, rare_collections
from harness.runner import run_scenario, simulate
from harness.runner.tables import collect
from harness.scenarios import parse_scenario
from harness.sweep.execute import Task, run_serial, run_task
from tests.scenarios.helpers import small

#: A threshold no library would choose: whatever changes it shows.
_OURS = (1234, 11, 12)


def _watched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every call that changes the collector's state or starts a thread."""
    calls: list[str] = []

    def recording(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            calls.append(name)
            return original(*args)

        return call

    for name in ("set_threshold", "disable", "enable", "freeze", "unfreeze"):
        monkeypatch.setattr(gc, name, recording(name, getattr(gc, name)))
    monkeypatch.setattr(
        threading.Thread, "start", recording("Thread.start", threading.Thread.start)
    )
    return calls


def _task() -> Task:
    return Task(point=0, replication=0, seed=5, params={}, scenario=small(runs=[]))


@pytest.fixture
def our_threshold() -> Any:
    before = gc.get_threshold()
    gc.set_threshold(*_OURS)
    yield
    gc.set_threshold(*before)


@pytest.mark.req("NB-2", "NB-3")
@pytest.mark.usefixtures("our_threshold")
def test_library_calls_leave_the_collector_as_they_found_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _watched(monkeypatch)
    scenario = parse_scenario(small())
    raw = simulate(scenario)
    assert gc.get_threshold() == _OURS
    collect(raw)
    collect(simulate(scenario), release=True)
    run_scenario(scenario)
    run_task(_task())
    run_serial([_task()], progress=False)
    assert calls == [] and gc.get_threshold() == _OURS and gc.isenabled()


@pytest.mark.req("NB-2", "NB-3")
@pytest.mark.usefixtures("our_threshold")
def test_runs_in_threads_at_once_leave_the_collector_as_they_found_it() -> None:
    """As on a threaded Dask worker: several tasks at once in one process."""
    with ThreadPoolExecutor(max_workers=3) as pool:
        rows = list(pool.map(lambda _: run_task(_task()), range(3)))
    assert rows[0] == rows[1] == rows[2]
    assert gc.get_threshold() == _OURS


@pytest.mark.req("NB-2")
@pytest.mark.usefixtures("our_threshold")
def test_the_command_line_runs_with_rare_collections_and_gives_the_threshold_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[int, int, int]] = []
    monkeypatch.setattr(run_command, "run", lambda args: seen.append(gc.get_threshold()) or 0)
    assert main(["run", "scenarios/default.yaml"]) == 0
    assert seen == [(YOUNG_COLLECTION_THRESHOLD, *_OURS[1:])]
    assert gc.get_threshold() == _OURS


@pytest.mark.req("NB-3")
@pytest.mark.usefixtures("our_threshold")
def test_a_workers_setup_raises_the_threshold_for_its_process() -> None:
    collect_rarely()
    assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *_OURS[1:])


def test_rare_collections_restore_the_threshold_also_on_error() -> None:
    before = gc.get_threshold()
    with rare_collections():
        assert gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    with pytest.raises(ValueError, match="inside"), rare_collections():
        raise ValueError("inside")
    assert gc.get_threshold() == before
