"""HAR-5: the harness holds a target to the contract, never to the simulator's gap choices.

A deployment that decides the gaps differently (another success status for creates, none of the
simulator's optional avatar fields, extra response fields, other error codes where the seed names
none) still conforms.
"""

from __future__ import annotations

import pytest

from harness.conformance.runner import RunOptions, run
from tests.conformance.mutations import Keys, Mutated, Reply, Scope
from tests.conformance.support import simulated

pytestmark = pytest.mark.req("HAR-5", "HAR-2")

_GAP_AVATAR_FIELDS = ("from_photo_upload", "instructions", "voice_instructions", "failure_reason")


def other_gap_choices(scope: Scope, reply: Reply, keys: Keys) -> None:
    body = reply.json()
    if reply.status == 201:
        reply.status = 200  # GAP-STATUS-1: the seed names no success code for creates
    if isinstance(body, dict):
        for item in [body, *(body.get("data") or [])] if body.get("object") == "list" else [body]:
            if isinstance(item, dict) and item.get("object") == "avatar":
                for name in _GAP_AVATAR_FIELDS:  # GAP-AV-1: field names the seed does not give
                    item.pop(name, None)
            if isinstance(item, dict) and item.get("object") == "session":
                item["region"] = "eu-west"  # the seed lets responses grow
        error = body.get("error")
        if isinstance(error, dict) and str(error.get("code", "")).endswith(".not_found"):
            error["code"] = "resource_missing"  # GAP-ERR-1: codes the seed does not list
        reply.set_json(body)


def test_a_deployment_with_other_gap_choices_conforms() -> None:
    def wrap(app: object, keys: Keys) -> Mutated:
        return Mutated(app, keys, None, other_gap_choices)  # type: ignore[arg-type]

    sim = simulated(wrap=wrap)
    exchange = sim.target.request("GET", "/v1/avatars", params={"limit": 1})
    assert "from_photo_upload" not in exchange.json()["data"][0]
    report = run(sim.target, RunOptions(max_examples=3, seed=5))
    assert report.failed_names() == [], report.summary()
    assert report.count("skipped") == 0
