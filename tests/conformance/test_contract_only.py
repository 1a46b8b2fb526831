"""HAR-5: the harness holds a target to the contract, never to the simulator's gap choices.

The gap-variant (``tests/conformance/gap_variant.py``) is the real facade behind edits and a
configuration that decide the seed's gaps otherwise, each legal under the seed (the choice names
the section). The whole conformance run, fuzz included, reports nothing against it; and each
choice is shown to be in effect, so the variant cannot pass by doing nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness.conformance.coverage import NOT_CHECKABLE, contract_ids
from harness.conformance.inputs import DEFAULT_TRANSPORT
from harness.conformance.runner import RunOptions, run
from tests.conformance.gap_variant import (
    GAP_CHOICES,
    GAP_VARIANT,
    RUN_STATUSES,
    GapChoice,
    combined,
)
from tests.conformance.support import ADMIN_TOKEN, Simulated, simulated

pytestmark = pytest.mark.req("HAR-5", "HAR-2")

SESSION = {
    "avatar_id": "av_stock_mock",
    "transport": dict(DEFAULT_TRANSPORT),
    "quality": "mock",
}


def test_the_gap_variant_passes_the_whole_run() -> None:
    report = run(simulated(edits=GAP_VARIANT).target, RunOptions(max_examples=3, seed=5))
    assert report.failed_names() == [], report.summary()
    assert [r.name for r in report.results if r.outcome == "skipped"] == [], report.summary()
    assert set(report.coverage.checked) == set(contract_ids()) - set(NOT_CHECKABLE)


def test_there_are_at_least_ten_choices_each_naming_the_seed() -> None:
    assert len(GAP_CHOICES) >= 10
    for choice in GAP_CHOICES:
        assert choice.seed.startswith("§"), choice.name
        assert choice.edits.request or choice.edits.response or choice.edits.config


# -- each choice is in effect ---------------------------------------------------------------------


def _create(sim: Simulated, body: dict[str, Any] | None = None, **headers: str) -> Any:
    return sim.target.request("POST", "/v1/sessions", json_body=body or SESSION, headers=headers)


def _advance(sim: Simulated, seconds: float) -> None:
    sim.platform.advance(seconds)


def creates_answer_200(sim: Simulated) -> None:
    assert _create(sim).status == 200


def other_run_statuses(sim: Simulated) -> None:
    run_id = sim.target.request("GET", "/v1/runs").json()["data"][0]["id"]
    assert sim.target.request("GET", f"/v1/runs/{run_id}").json()["status"] == "completed"
    assert set(RUN_STATUSES.values()) >= {"completed"}


def _renamed(path: str, ours: str, theirs: str, value: str) -> Callable[[Simulated], None]:
    def witness(sim: Simulated) -> None:
        if "{run}" in path:
            run_id = sim.target.request("GET", "/v1/runs").json()["data"][0]["id"]
            where = path.replace("{run}", run_id)
        else:
            where = path
        assert sim.target.request("GET", where, params={ours: value}).status == 200
        assert sim.target.request("GET", where, params={theirs: value}).status == 400

    return witness


def worker_token_required(sim: Simulated) -> None:
    transport = {k: v for k, v in DEFAULT_TRANSPORT.items() if k != "worker_token"}
    refused = _create(sim, {**SESSION, "transport": transport})
    assert refused.status == 400


def validation_as_400(sim: Simulated) -> None:
    refused = sim.target.request("GET", "/v1/sessions", params={"limit": 0})
    assert refused.status == 400 and refused.json()["error"]["type"] == "invalid_request"


def token_bucket(sim: Simulated) -> None:
    created = _create(sim)
    assert created.headers["x-ratelimit-limit"] == "10"
    assert int(created.headers["x-ratelimit-reset"]) < 60  # seconds, not a Unix time
    assert sim.platform.config.limits.rate.session_creates_per_window is None


def retry_after_date(sim: Simulated) -> None:
    _create(sim)
    refused = _create(sim)  # the per-key cap
    assert refused.status == 429 and refused.headers["retry-after"].endswith("GMT")
    assert "date" in refused.headers


def other_error_codes(sim: Simulated) -> None:
    missing = sim.target.request("GET", "/v1/sessions/sess_00000000000000000000000000")
    assert missing.json()["error"]["code"] == "e_session_not_found"


def other_session_error(sim: Simulated) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    sim.target.request("POST", "/_sim/faults/capacity", role=None, headers=admin,
                       json_body={"workers": 0})  # fmt: skip
    session_id = _create(sim).json()["id"]
    _advance(sim, 20)
    error = sim.target.request("GET", f"/v1/sessions/{session_id}").json()["error"]
    assert error["reason"] == "no_capacity" and "code" not in error


def extra_fields(sim: Simulated) -> None:
    assert _create(sim).json()["region"] == "eu-west-1"
    assert sim.target.request("GET", "/v1/sessions").json()["url"] == "/v1/sessions"


def no_replay_header(sim: Simulated) -> None:
    first = _create(sim, **{"Idempotency-Key": "k-1"})
    again = _create(sim, **{"Idempotency-Key": "k-1"})
    assert again.json()["id"] == first.json()["id"]
    assert "idempotent-replayed" not in again.headers


def cancel_elsewhere(sim: Simulated) -> None:
    run_id = sim.target.request("GET", "/v1/runs").json()["data"][0]["id"]
    assert sim.target.request("POST", f"/v1/runs/{run_id}/cancel").status == 404
    assert sim.target.request("POST", f"/v1/runs/{run_id}/cancellation").status == 409


def pipecat_names(sim: Simulated) -> None:
    body = {"avatar_id": "av_stock_mock", "idle_timeout": 5}
    created = sim.target.request("POST", "/v1/pipecat/sessions", json_body=body)
    assert created.json()["session"]["idle_timeout_seconds"] == 5


def configured_choices(sim: Simulated) -> None:
    body = {k: v for k, v in SESSION.items() if k != "quality"}
    created = _create(sim, {**body, "max_duration_seconds": 3600}).json()
    assert created["max_duration_seconds"] == 1800 and created["quality"] == "lite"


def unset_fields_omitted(sim: Simulated) -> None:
    created = _create(sim).json()
    assert created["status"] == "queued"
    assert {"started_at", "first_frame_at", "error"}.isdisjoint(created)
    asset = sim.target.request("GET", "/v1/assets").json()["data"][0]
    assert asset["media_type"].startswith("audio/")
    assert {"deleted_at", "height", "width", "schema_uri"}.isdisjoint(asset)


def other_order(sim: Simulated) -> None:
    models = [m["id"] for m in sim.target.request("GET", "/v1/models").json()["data"]]
    assert models[-1] == "sim/echo-text"
    assert next(iter(_create(sim).json())) != "id"


WITNESSES: dict[str, Callable[[Simulated], None]] = {
    "creates answer 200": creates_answer_200,
    "other run and deletion status names": other_run_statuses,
    "session filter named state": _renamed("/v1/sessions", "state", "status", "queued"),
    "avatar filters named visibility and search":
        _renamed("/v1/avatars", "visibility", "scope", "all"),
    "run events offset named after":
        _renamed("/v1/runs/{run}/events", "after", "starting_after", "0"),
    "usage timezone named tz": _renamed("/v1/usage", "tz", "timezone", "UTC"),
    "worker_token required": worker_token_required,
    "validation refused with 400": validation_as_400,
    "create rate limit as a token bucket of 10 per minute, counting accepted creates": token_bucket,
    "Retry-After as an HTTP date": retry_after_date,
    "other error codes": other_error_codes,
    "another session error shape": other_session_error,
    "extra fields": extra_fields,
    "no Idempotent-Replayed header": no_replay_header,
    "run cancel at /cancellation": cancel_elsewhere,
    "pipecat fields named idle_timeout and max_duration": pipecat_names,
    "plan clamp of 1800 s, default quality lite, 30 run creates per minute": configured_choices,
    "unset fields omitted instead of null": unset_fields_omitted,
    "other ordering": other_order,
}  # fmt: skip


def test_every_choice_has_a_witness() -> None:
    assert set(WITNESSES) == {choice.name for choice in GAP_CHOICES}


@pytest.mark.parametrize("choice", GAP_CHOICES, ids=[c.name for c in GAP_CHOICES])
def test_each_choice_is_in_effect(choice: GapChoice) -> None:
    # The variant with every choice but this one still needs the others (e.g. 422 -> 400), so
    # each witness runs against the whole variant, and against the plain facade it must fail.
    WITNESSES[choice.name](simulated(edits=GAP_VARIANT))
    with pytest.raises((AssertionError, KeyError, IndexError, StopIteration)):
        WITNESSES[choice.name](simulated(edits=combined(())))
