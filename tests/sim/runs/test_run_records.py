"""A run keeps what its reads show, as raw values (PERF-10): its events as their id's random
bits, type, part, data and time, rendered when read; no input model once it is over.

The rendering is held to the eager one: each event's id is the ULID of its time and bits
(``sim.ids``), its data a read-only copy of what was given (an output part's, its item's
resource), and a deletion redacts the output parts as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pytest
from ulid import ULID

from sim.runs.records import Run

if TYPE_CHECKING:
    from conftest import World


def _run(world: World, run_id: str) -> Run:
    return next(run for run in world.runs.runs() if run.id == run_id)


@pytest.mark.req("PERF-10", "RES-RUN-4")
def test_a_finished_runs_events_read_as_the_values_they_were_appended_with(world: World) -> None:
    run_id = world.speech()["id"]
    world.finish(run_id)
    run = _run(world, run_id)
    assert run.input is None and run.media == {}  # only its execution read them
    events = run.events.events
    page = world.runs.events(world.alice, run_id, starting_after=None, limit=100)["data"]
    assert [e.to_resource(world.kernel.clock) for e in events] == page
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    for event in events:
        ms = world.kernel.clock.epoch_ms(event.at)
        assert event.id.startswith("evt_") and ULID.from_str(event.id[4:]).milliseconds == ms
        assert isinstance(event.data, Mapping)
        with pytest.raises(TypeError):
            event.data["x"] = 1  # type: ignore[index]
    outputs = [e for e in events if e.type == "run.output"]
    assert outputs and [dict(e.data) for e in outputs] == [
        item.to_resource() for item in run.outputs
    ]
    progress = [e for e in events if e.type == "run.progress"]
    assert [e.data["progress"] for e in progress] == sorted(e.data["progress"] for e in progress)


@pytest.mark.req("PERF-10")
def test_two_runs_share_their_progress_payloads_and_each_read_is_a_fresh_copy(
    world: World,
) -> None:
    first, second = world.speech()["id"], world.speech()["id"]
    world.finish(first)
    world.finish(second)
    logs = [_run(world, run).events for run in (first, second)]
    pages = [
        world.runs.events(world.alice, run, starting_after=None, limit=100)["data"]
        for run in (first, second)
    ]
    progress = [[e["data"] for e in page if e["type"] == "run.progress"] for page in pages]
    assert progress[0] == progress[1] and progress[0]
    assert progress[0][0] is not progress[1][0]  # the rendered copy is the reader's own
    assert len(logs[0]) == len(pages[0])
