"""``avatar-sim serve`` survives the bad-input battery and concurrent clients (SIM-8).

A real served subprocess answers no 5xx and no invalid JSON, neither to
any input reported as breaking it (``tests/serve/battery.py``) nor under concurrent clients, and
after every bad input the organization and the public routes still answer. ``make test`` runs the
battery alongside a modest crowd; ``make test-slow`` runs it against 200 concurrent clients.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from tests.serve.battery import Tally, battery, load
from tests.serve.support import served


async def _battery_under_load(base_url: str, token: str, clients: int, rounds: int) -> Tally:
    crowd, bad = await asyncio.gather(
        load(base_url, token, clients=clients, rounds=rounds), battery(base_url, token)
    )
    crowd.statuses.update(bad.statuses)
    crowd.problems.extend(bad.problems)
    return crowd


#: Enough workers that the crowd never meets the contract's own 503 (``at_capacity``): every 5xx
#: left to see would be a failure of the server.
ROOMY = """
name: roomy
seed: 11
duration: 1h
config:
  scheduler: {workers: 256, max_queue_length: 256}
organizations:
  - {name: Scenario Org, plan: pro}
"""


def _run(tmp_path: Path, clients: int, rounds: int) -> Tally:
    scenario = tmp_path / "roomy.yaml"
    scenario.write_text(ROOMY, encoding="utf-8")
    with served(tmp_path, "--time-factor", "0.5", "--scenario", str(scenario)) as running:
        tally = asyncio.run(
            _battery_under_load(running.base_url, running.keys["admin_token"], clients, rounds)
        )
        code, _ = running.stop(signal.SIGTERM)
        _, err = running.output()
    assert code == 0
    assert b"Traceback" not in err, err.decode()
    return tally


@pytest.mark.req("SIM-8", "ERR-1", "ERR-3", "SIM-7")
def test_the_served_simulator_survives_the_battery_and_a_crowd(tmp_path: Path) -> None:
    tally = _run(tmp_path, clients=20, rounds=3)
    assert tally.problems == [], tally.problems[:20]
    assert sum(tally.statuses.values()) > 300
    assert tally.statuses[201] > 0 and tally.statuses[200] > 0


@pytest.mark.slow
@pytest.mark.req("SIM-8", "ERR-1", "ERR-3")
def test_the_served_simulator_survives_the_battery_and_200_concurrent_clients(
    tmp_path: Path,
) -> None:
    tally = _run(tmp_path, clients=200, rounds=5)
    assert tally.problems == [], tally.problems[:20]
    assert sum(tally.statuses.values()) > 6000
