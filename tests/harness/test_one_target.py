"""One ``Target`` serves conformance, the toolkit and the runner's HTTP door (ARCH-4).

The same target object answers a conformance request (an ``Exchange`` its observers see), hands
a toolkit client that ``target_of`` maps back to it, and carries the runner's door, so a call
means the same thing whichever tool makes it; an ASGI app that is not the simulator is reached as
a deployment would be (wall clock, no admin).
"""

from __future__ import annotations

import pytest

from harness.runner.http_door import HttpDoor
from harness.target import (
    Credentials,
    Exchange,
    InProcessTarget,
    Target,
    UrlTarget,
    target_of,
)
from harness.testing.admin import in_process_target
from sim.config import SimConfig
from sim.platform import Platform

pytestmark = pytest.mark.req("ARCH-4")


def _platform() -> tuple[Platform, str]:
    platform = Platform.create(SimConfig())
    keys = platform.admin.create_organization("Acme", "pro")["keys"]
    return platform, str(keys["unrestricted"])


def test_one_target_serves_conformance_toolkit_and_door() -> None:
    platform, key = _platform()
    target = Target.in_process(platform, Credentials(api=key))
    seen: list[Exchange] = []
    target.observers.append(seen.append)

    exchange = target.request("GET", "/v1/models", operation="listModels")
    assert exchange.status == 200 and seen == [exchange]
    models = {model["id"] for model in exchange.json()["data"]}

    client = target.client_for(key)
    assert target_of(client) is target
    assert {m["id"] for m in client.get("/v1/models").json()["data"]} == models

    caller = platform.authenticate(f"Bearer {key}")
    with HttpDoor(target) as door:
        body = door.call("listModels", caller, {}).body
    assert isinstance(body, dict) and {m["id"] for m in body["data"]} == models
    assert seen == [exchange], "only requests made through the target are its exchanges"


def test_time_passes_the_same_way_for_every_user_of_a_target() -> None:
    platform, key = _platform()
    target = in_process_target(platform)
    assert isinstance(target, InProcessTarget) and target.admin is not None
    before = target.now()
    target.jump(30.0)
    assert target.now() == before + 30.0 == platform.clock.now
    assert target.seconds == "simulated seconds"
    assert target_of(target.client_for(key)) is target


def test_an_app_that_is_not_the_simulator_is_reached_as_a_deployment() -> None:
    async def teapot(scope: object, receive: object, send: object) -> None:
        assert callable(send)
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    target = Target.asgi(teapot, Credentials(api="sk_x"))
    assert isinstance(target, UrlTarget) and target.kind == "url" and target.admin is None
    assert target.seconds == "wall seconds"
    assert target.request("GET", "/v1/models").status == 418
