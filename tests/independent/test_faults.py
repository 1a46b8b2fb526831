"""Every registered fault is real: a client can tell it from the clean service, in both readings."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from tests.independent.client import Api, image_bytes
from tests.independent.faults import FAULTS, FaultSet
from tests.independent.probes import PROBES, ProbeSpec


def observe(spec: ProbeSpec, reading: str, faults: tuple[str, ...]) -> Any:
    async def go() -> Any:
        async with Api(reading, faults, workers=spec.workers) as api:
            return await spec.fn(api)

    return asyncio.run(go())


@pytest.mark.req("HAR-12")
def test_the_registry_is_complete_and_well_formed() -> None:
    assert len(FAULTS) >= 45
    assert set(PROBES) == set(FAULTS), "one probe per fault, and no stray probes"
    for name, fault in FAULTS.items():
        assert fault.name == name
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", name)
        assert re.match(r"[1-9]\. ", fault.section)
        assert fault.rule.strip() and fault.effect.strip()
    sections = {fault.section.split(".")[0] for fault in FAULTS.values()}
    assert sections == {str(n) for n in range(1, 10)}, "faults cover every section of the spec"
    resources = {f.section for f in FAULTS.values() if f.section.startswith("2.")}
    assert len(resources) >= 12
    endpoint_groups = {f.section for f in FAULTS.values() if f.section.startswith("4.")}
    assert len(endpoint_groups) >= 7


@pytest.mark.req("HAR-12")
def test_unknown_fault_names_are_refused() -> None:
    with pytest.raises(KeyError):
        FaultSet(["no_such_fault"])
    with pytest.raises(KeyError):
        "no_such_fault" in FaultSet()  # noqa: B015 - the check itself must raise


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", ["a", "b"])
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_each_fault_changes_what_a_client_sees(name: str, reading: str) -> None:
    spec = PROBES[name]
    clean = observe(spec, reading, ())
    broken = observe(spec, reading, (name,))
    assert clean != broken, f"{name} is invisible under reading {reading}: both saw {clean!r}"


async def tour(api: Api) -> list[int]:
    """Every endpoint once, the way a tester's happy path would; returns the status codes."""
    statuses = []

    async def hit(coro: Any) -> Any:
        r = await coro
        statuses.append(r.status_code)
        return r

    for path in ("/v1/status", "/v1/billing/plans"):
        await hit(api.get(path, None))
    for path in ("/v1/models", "/v1/billing/quota", "/v1/usage", "/v1/avatars", "/v1/assets"):
        await hit(api.get(path))
    created = (await hit(api.create_session())).json()
    api.wait(3.5)
    await hit(api.get("/v1/sessions"))
    if "id" in created:
        await hit(api.get(f"/v1/sessions/{created['id']}"))
        await hit(api.end(created["id"]))
    relay = await hit(api.pipecat("other_org_key"))
    if relay.status_code < 300:
        await hit(api.end(relay.json()["session"]["id"], "other_org_key"))
    avatar = (await hit(api.upload(image_bytes()))).json()
    api.wait(4)
    await hit(api.get(f"/v1/avatars/{avatar['id']}"))
    run = await api.media_run()
    for suffix in ("", "/status", "/events"):
        await hit(api.get(f"/v1/runs/{run['id']}{suffix}"))
    await hit(api.get("/v1/runs"))
    for asset in (await hit(api.get("/v1/assets"))).json()["data"]:
        await hit(api.get(f"/v1/assets/{asset['id']}/content"))
    await hit(api.post(api.cancel_path(run["id"])))
    await hit(api.delete(f"/v1/runs/{run['id']}"))
    api.wait(60)
    await hit(api.get("/v1/usage", params={"period": "previous_month"}))
    return statuses


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("name", sorted(FAULTS))
def test_no_fault_takes_the_service_down(name: str) -> None:
    async def go(reading: str) -> list[int]:
        async with Api(reading, (name,)) as api:
            return await tour(api)

    for reading in ("a", "b"):
        statuses = asyncio.run(go(reading))
        assert all(s < 500 for s in statuses), (reading, statuses)
