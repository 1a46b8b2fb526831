"""A served simulator starts with an asset in each organization (SIM-8): one
finished run of a model whose output is an asset, made in the simulated minute before serving
begins, so asset reads work at once and the served clock still starts at the wall-clock start.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.scenarios import load_scenario
from harness.serve.runner import ServedSimulator, ServeOptions, build
from harness.serve.seeding import ASSET_MODEL

from .support import served

REPO = Path(__file__).resolve().parents[2]
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BASE = "http://127.0.0.1:1"


async def _assets(simulator: ServedSimulator) -> list[dict[str, Any]]:
    """Per organization: its assets, its runs and the first asset's content, read through the
    facade (the served app's inner app: no lifespan, no wall clock)."""
    out = []
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=simulator.app.app), base_url=BASE
    ) as client:
        organizations: list[dict[str, Any]] = simulator.document["organizations"]  # type: ignore[assignment]
        for org in organizations:
            headers = {"Authorization": f"Bearer {org['keys']['unrestricted']}"}
            listed = (await client.get("/v1/assets", headers=headers)).json()["data"]
            runs = (await client.get("/v1/runs", headers=headers)).json()["data"]
            content = await client.get(f"/v1/assets/{listed[0]['id']}/content", headers=headers)
            out.append({"assets": listed, "runs": runs, "content": content})
    return out


def _read(simulator: ServedSimulator) -> list[dict[str, Any]]:
    return asyncio.run(_assets(simulator))


@pytest.mark.req("SIM-8")
def test_each_served_organization_has_one_finished_run_and_its_asset() -> None:
    simulator = build(ServeOptions(time_factor=None, epoch=START), BASE)
    seen = _read(simulator)
    assert len(seen) == 2
    for org in seen:
        assert len(org["assets"]) == 1, org["assets"]
        [run] = org["runs"]
        assert run["model"] == ASSET_MODEL and run["status"] == "succeeded"
        asset = org["assets"][0]
        assert asset["media_type"] == "audio/wav" and asset["byte_size"] > 0
        assert org["content"].status_code == 200
        assert len(org["content"].content) == asset["byte_size"]
    assert seen[0]["assets"][0]["id"] != seen[1]["assets"][0]["id"]


@pytest.mark.req("SIM-8")
def test_seeding_happens_before_the_start_so_the_served_clock_begins_at_it() -> None:
    simulator = build(ServeOptions(time_factor=None, epoch=START), BASE)
    assert simulator.platform.clock.now_datetime() == START
    created = datetime.fromisoformat(_read(simulator)[0]["runs"][0]["created_at"])
    assert created < START


@pytest.mark.req("SIM-8", "SIM-2")
def test_the_seeded_assets_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    def fingerprint(seed: int) -> list[tuple[str, bytes]]:
        simulator = build(ServeOptions(time_factor=None, epoch=START, seed=seed), BASE)
        return [(o["assets"][0]["id"], o["content"].content) for o in _read(simulator)]

    assert fingerprint(3) == fingerprint(3)
    assert [i for i, _ in fingerprint(3)] != [i for i, _ in fingerprint(4)]


@pytest.mark.req("SIM-8")
def test_a_served_scenario_is_left_as_its_file_describes() -> None:
    scenario = load_scenario(REPO / "scenarios" / "default.yaml")
    simulator = build(ServeOptions(time_factor=None, epoch=START, scenario=scenario), BASE)
    assert simulator.platform.clock.now == 0.0
    assert len(simulator.platform.api_log) == 0


@pytest.mark.req("SIM-8")
def test_the_seeded_asset_downloads_from_a_served_process(tmp_path: Path) -> None:
    with served(tmp_path, "--manual-clock") as server:
        key = server.org("starter")["keys"]["unrestricted"]
        with server.client() as client:
            headers = {"Authorization": f"Bearer {key}"}
            [asset] = client.get("/v1/assets", headers=headers).json()["data"]
            assert asset["download_url"].startswith(server.base_url)
            content = client.get(asset["download_url"], headers=headers)
        server.stop()
    assert content.status_code == 200
    assert content.headers["content-type"] == "audio/wav"
    assert len(content.content) == asset["byte_size"]
