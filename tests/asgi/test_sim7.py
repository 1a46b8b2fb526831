"""SIM-7: the same scripted workload through the facade and through ``Platform.call`` directly
gives identical records: every answer, every session, run, event and ledger entry.

Two platforms with the same seed run the same script. One is driven over HTTP (the in-process
app), the other by calling ``platform.call`` with the parameters a Python caller would pass. The
HTTP side builds its requests from the spec's route table, so the script names operations, not
URLs. Request ids come from their own random stream, so HTTP traffic shifts no domain id.

The script's refusals include the domain's own (an unknown id, a run that cannot be deleted yet)
and requests the spec's schema refuses: both doors give the domain's refusal, with the same type,
code, param and message, counted and logged alike. The run is repeated under a configuration whose
limits differ from the seed's: the facade validates with the running configuration's
bounds, so a value only that configuration allows is accepted through HTTP too, and one it
forbids is refused by both doors in the same words.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from httpx import Client
from PIL import Image

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.asgi.routes import Route
from sim.config import LimitsConfig, SimConfig
from sim.platform import Platform
from tests.asgi.doors import answer_of, call_answer, url_of
from tests.world import session_body


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (96, 96), (10, 200, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


@dataclass(frozen=True)
class Call:
    operation_id: str
    org: int | None  # index of the organization whose unrestricted key is used; None: public
    params: dict[str, Any] = field(default_factory=dict)  # path and query parameters
    body: dict[str, Any] | None = None
    idempotency_key: str | None = None
    upload: dict[str, Any] | None = None  # createAvatar's multipart fields


@dataclass(frozen=True)
class Advance:
    seconds: float


@dataclass(frozen=True)
class Audio:
    step: int  # index of the call whose answer is the session
    kind: Literal["speech", "silence"]
    duration: float


Step = Call | Advance | Audio

SESSION = session_body("av_stock_aria")

SCRIPT: list[Step] = [
    Call("getStatus", None),
    Call("createSession", 0, body=SESSION, idempotency_key="first"),
    Call("createSession", 0, body=SESSION, idempotency_key="first"),
    Call(
        "createPipecatSession",
        1,
        body={"avatar_id": "av_stock_ben", "quality": "pro", "idle_timeout_seconds": 40},
    ),
    Call("createRun", 0, params={"model_id": "sim/echo-text"}, body={"input": {"prompt": "hi"}}),
    Call(
        "createRun",
        0,
        params={"model_id": "sim/speech"},
        body={"input": {"text": "hello"}},
        idempotency_key="speech",
    ),
    Call(
        "createAvatar",
        1,
        upload={
            "image": _png(),
            "image_filename": "me.png",
            "image_content_type": "image/png",
            "name": "Me",
        },
    ),
    Advance(8.0),
    Audio(1, "speech", 5.0),
    Call("listSessions", 0, params={"limit": 5}),
    Call("retrieveSession", 1, params={"session_id": "sess_01JAAAAAAAAAAAAAAAAAAAAAAA"}),
    Advance(30.0),
    Call("endSession", 0, params={"session_id": 1}),
    Call("listRuns", 0, params={"limit": 10}),
    Call("listRunEvents", 0, params={"run_id": 4, "limit": 3, "starting_after": 1}),
    Call("getRunStatus", 0, params={"run_id": 5}),
    Call("deleteRun", 0, params={"run_id": 5}),
    Advance(120.0),
    Call("deleteRun", 0, params={"run_id": 4}),
    Call("listAssets", 0, params={"limit": 5}),
    Call("listAvatars", 1, params={"scope": "org"}),
    Advance(4000.0),
    Call("retrieveRun", 0, params={"run_id": 4}),
    Call("getUsage", 0, params={"period": "current_month"}),
    Call("getUsage", 1, params={"timezone": "America/New_York"}),
    Call("getQuota", 1),
    # Refused by the schema over HTTP and by the domain in Python: both count and are logged.
    Call("createSession", 1, body={**SESSION, "idle_timeout_seconds": 0}),
    Call("listSessions", 0, params={"limit": 0}),
    # Allowed or refused depending on the configuration, the same way through both doors.
    Call("createSession", 1, body={**SESSION, "idle_timeout_seconds": 900}),
    Call("createSession", 1, body={**SESSION, "idle_timeout_seconds": 1300}),
    Call("createSession", 1, body={**SESSION, "max_duration_seconds": 3601}),
    Call("listSessions", 1, params={"limit": 60}),
    Call("listRunEvents", 0, params={"run_id": 4, "limit": 400}),
    Call(
        "createRun",
        0,
        params={"model_id": "sim/echo-text"},
        body={"input": {"prompt": "x"}, "external_id": "e" * 40},
    ),
    Call("createSession", 1, body={**SESSION, "metadata": {"note": "n" * 3000}}),
    Call("listPlans", None),
    Call("listModels", 1),
]


def _resolve(params: dict[str, Any], answers: list[Any]) -> dict[str, Any]:
    """Integers in id parameters refer to the id answered by an earlier step."""
    resolved = {}
    for name, value in params.items():
        if name.endswith("_id") and isinstance(value, int):
            value = answers[value]["id"]
        resolved[name] = value
    return resolved


Answer = dict[str, Any]
Driver = Callable[[Call, dict[str, Any]], Answer]


def _run(platform: Platform, driver_for: Callable[[Platform, list[str]], Driver]) -> list[Answer]:
    keys = [
        platform.admin.create_organization(name, plan)["keys"]["unrestricted"]
        for name, plan in (("Alpha", "enterprise"), ("Beta", "pro"))
    ]
    drive = driver_for(platform, keys)
    answers: list[Any] = []
    for step in SCRIPT:
        if isinstance(step, Advance):
            platform.clock.advance(step.seconds)
            answers.append({"advanced": step.seconds})
        elif isinstance(step, Audio):
            answers.append(
                platform.admin.inject_audio(answers[step.step]["id"], step.kind, step.duration)
            )
        else:
            answers.append(drive(step, _resolve(step.params, answers)))
    return answers


def _direct(platform: Platform, keys: list[str]) -> Driver:
    def drive(call: Call, params: dict[str, Any]) -> Answer:
        caller = None if call.org is None else platform.authenticate(f"Bearer {keys[call.org]}")
        arguments = dict(params)
        if call.body is not None:
            arguments["body"] = call.body
        if call.idempotency_key is not None:
            arguments["idempotency_key"] = call.idempotency_key
        if call.upload is not None:
            arguments.update(call.upload)
        return call_answer(platform, call.operation_id, caller, arguments)

    return drive


def _http(platform: Platform, keys: list[str]) -> Driver:
    app = create_app(platform)
    routes: dict[str, Route] = {r.operation_id: r for r in app.state.route_table.routes}
    client = Client(transport=SyncASGITransport(app), base_url="http://testserver")

    def drive(call: Call, params: dict[str, Any]) -> Answer:
        route = routes[call.operation_id]
        headers = {} if call.org is None else {"Authorization": f"Bearer {keys[call.org]}"}
        if call.idempotency_key is not None:
            headers["Idempotency-Key"] = call.idempotency_key
        kwargs: dict[str, Any] = {"headers": headers}
        if call.body is not None:
            kwargs["json"] = call.body
        if call.upload is not None:
            upload = call.upload
            kwargs["files"] = {
                "image": (upload["image_filename"], upload["image"], upload["image_content_type"])
            }
            kwargs["data"] = {"name": upload["name"]}
        response = client.request(route.method, url_of(route, params), **kwargs)
        if response.status_code < 400:
            assert response.status_code == route.success_status
        return answer_of(response)

    return drive


def _records(platform: Platform) -> dict[str, Any]:
    """Everything the platform recorded, as plain JSON-comparable data."""
    return {
        "sessions": [platform.sessions.render(s.id) for s in platform.sessions.sessions()],
        "runs": [repr(run) for run in platform.runs.runs()],
        "deletions": [repr(d) for d in platform.runs.deletions()],
        "events": [{**e.to_payload(), "org_id": e.org_id} for e in platform.kernel.events],
        "ledger": [repr(entry) for entry in platform.billing.entries()],
        "api_log": [
            (c.at, c.operation_id, c.org_id, c.outcome, c.error_type) for c in platform.api_log
        ],
        "now": platform.clock.now,
    }


#: Limits unlike the seed's: wider timeouts, smaller pages and metadata, fewer run-event pages.
CONFIGURED_LIMITS: dict[str, Any] = {
    "idle_timeout_max_seconds": 1200,
    "max_duration_ceiling_seconds": 7200,
    "page_size_max": 50,
    "run_events_page_size_max": 300,
    "metadata_max_bytes": 2048,
}


def _config(seed: int, limits: dict[str, Any]) -> SimConfig:
    return SimConfig(seed=seed, limits=LimitsConfig(**limits))


@pytest.mark.req("SIM-7", "SIM-6", "EP-SESS-1", "LIM-7")
@pytest.mark.parametrize(
    ("seed", "limits"),
    [(0, {}), (7, {}), (3, CONFIGURED_LIMITS)],
    ids=["seed-0", "seed-7", "configured-limits"],
)
def test_facade_and_python_api_give_identical_records(seed: int, limits: dict[str, Any]) -> None:
    direct = Platform.create(_config(seed, limits))
    served = Platform.create(_config(seed, limits))
    direct_answers = _run(direct, _direct)
    http_answers = _run(served, _http)
    for index, (a, b) in enumerate(zip(direct_answers, http_answers, strict=True)):
        assert a == b, (index, SCRIPT[index])
    assert json.dumps(_records(direct), default=str) == json.dumps(_records(served), default=str)
    # The script is not trivial: it created, refused, replayed and billed.
    kinds = {json.dumps(a.get("error")) for a in direct_answers if "error" in a}
    assert len(kinds) >= 2
    assert any(e["type"] == "session.ended" for e in _records(direct)["events"])
    assert _records(direct)["ledger"]
    # And the configuration decided: what only the configured limits allow was accepted.
    wide_timeout = next(a for s, a in zip(SCRIPT, direct_answers, strict=True) if _idle(s) == 900)
    accepted = "id" in wide_timeout  # a session (its own `error` field is null)
    assert accepted == bool(limits), wide_timeout


def _idle(step: Step) -> Any:
    return step.body.get("idle_timeout_seconds") if isinstance(step, Call) and step.body else None
