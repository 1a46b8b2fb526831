"""A run's records are tables: ``RawRun`` holds what its stores exported, and nothing live.

``simulate`` ends by exporting every store's records (``sim.columns.Table``) and handing the
platform over; what a ``RawRun`` reaches is values: tables of plain columns, the scenario, the
organizations' names and keys. Held by walking everything it references (a lazy column's
function only by what it closes over) and finding no platform, service, clock, SimPy object or
client of the run among it.
"""

from __future__ import annotations

import functools
import gc
import types
from collections.abc import Iterator
from typing import Any

import pytest
import simpy

from harness.runner import RawRun, play, simulate
from harness.runner.clients import ClientPool, OrgHandle
from harness.runner.engine import RAW_TABLES
from harness.runner.tables import collect
from harness.scenarios import parse_scenario
from sim.clock import Clock
from sim.columns import Table
from sim.platform import Platform
from tests.scenarios.helpers import small

#: What a ``RawRun`` must not reach: the live platform, its parts and the runner's live clients.
LIVE: tuple[type, ...] = (Platform, Clock, simpy.Environment, simpy.Event, ClientPool, OrgHandle)


def _reached(root: object) -> Iterator[Any]:
    """Every object ``root`` references, directly or not; a function by its closure only (its
    globals are its module's, not the run's), and no module or class."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, types.ModuleType | type):
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, types.FunctionType):
            stack.extend(cell.cell_contents for cell in item.__closure__ or ())
        elif isinstance(item, functools.partial):
            stack.extend((*item.args, *item.keywords.values()))
        elif isinstance(item, types.MethodType):
            stack.append(item.__self__)
        else:
            stack.extend(gc.get_referents(item))


def _scenario() -> Any:
    return parse_scenario(
        small(runs=[{"model": "sim/echo-text", "rate_per_hour": 20}], usage_timezones=["UTC"])
    )


@pytest.mark.req("NB-2", "PERF-7")
def test_a_raw_run_holds_the_stores_tables_and_nothing_live() -> None:
    raw = simulate(_scenario())
    assert isinstance(raw, RawRun) and set(raw.tables) == set(RAW_TABLES)
    assert all(isinstance(table, Table) for table in raw.tables.values())
    live = [type(item).__name__ for item in _reached(raw) if isinstance(item, LIVE)]
    assert live == []
    result = collect(raw)
    assert len(result.sessions) > 0 and len(result.runs) > 0 and len(result.usage) > 0


@pytest.mark.req("NB-2", "PERF-7")
def test_the_walk_finds_a_live_object_where_there_is_one() -> None:
    """The check can fail: a platform kept live (``play``) is reached from its ``Played``."""
    played = play(_scenario())
    assert any(isinstance(item, Platform) for item in _reached(played))
    assert not any(isinstance(item, LIVE) for item in _reached(played.records()))
